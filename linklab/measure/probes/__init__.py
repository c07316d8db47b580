"""The probes of a repetition, one class each (base.py says what a probe is):

  ping.py       IdlePing (before the window), LoadPing (through it)
  reorder.py    Reordering: a sequence-numbered UDP probe beside the flow
  cpu.py        CpuLoad: per core and per process
  counters.py   QueueCounters: every qdisc's counters, and the bond members' spread
  nstat.py      StackCounters: the two sides' TCP/UDP counters
  switches.py   SwitchCounters: packet-ins, datapath misses, port drops
  faults.py     FaultTimeline: the experiment's events, and the outage each caused
  judgement.py  Disturbance: the flags that say a repetition measured the emulator
The host's CPU (linklab/vm/hostcpu.py: HostCpu) is a probe too, supplied by linklab/placement.py
where the lab runs in the lab VM.
"""
