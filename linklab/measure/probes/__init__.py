"""The probes of a repetition, one class each (base.py says what a probe is):

  ping.py       IdlePing (before the window), LoadPing (through it)
  reorder.py    Reordering: a sequence-numbered UDP probe beside the flow
  cpu.py        CpuLoad: per core and per process
  counters.py   QueueCounters: every qdisc's counters, and the bond members' spread
  queues.py     QueueSampler: each shaped direction's backlog, drops, marks, delay at 10 Hz
  nstat.py      StackCounters: the two sides' TCP/UDP counters
  switches.py   SwitchCounters: packet-ins, datapath misses, port drops
  faults.py     FaultTimeline: the experiment's events, and the outage each caused
  tcpinfo.py    SenderTcpInfo: what held the TCP sender back (its tcp_info, near the flow's end)
  judgement.py  Disturbance: the flags that say a repetition measured the emulator, or what
                held its flow below what the path carries
The host's CPU (linklab/vm/hostcpu.py: HostCpu) is a probe too, supplied by linklab/placement.py
where the lab runs in the lab VM.
"""
