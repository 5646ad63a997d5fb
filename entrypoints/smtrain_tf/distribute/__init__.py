"""Distribution: which strategy runs, devices, building the strategy, Horovod/smddp, parameter-server tasks.

    choice.py           which strategy runs, from the contract alone
    gpu_check.py        the `gpus: ...` line; a GPU job that sees no GPU stops, naming the likely cause
    devices.py          device set-up before TensorFlow's first op
    distribution.py     building the strategy and what differs between strategies
    collective_libs.py  Horovod and smdistributed data parallel behind one face
    ps_servers.py       parameter-server worker and ps tasks
    replica_count.py    num_replicas_in_sync that records the batches a script makes with it (the wrap's
                        strategy; strategy() during a check)
    seeding.py          the wrap's one seeding rule: every worker's generators from the job's seed (paid run and
                        check alike)

`choice`, `gpu_check`, `ps_servers` and `seeding` import no TensorFlow at module level; the others do.
"""
