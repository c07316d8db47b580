"""Sweeps across machines on Ray (`linklab sweep EXP --cluster ADDRESS`): the driver here holds
the results store; each Ray node that may host a lab advertises the resource `linklab: 1` and
measures one unit of work (a group of points sharing the outermost axes) at a time, alone."""
