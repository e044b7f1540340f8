"""The conversions between IR levels: fusion -> sched (`convert-fusion-to-sched`), sched -> nvvm
(`convert-sched-to-nvvm`) and nvvm -> llvm (`convert-nvvm-to-llvm`)."""
