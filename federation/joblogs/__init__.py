"""Job logs: the federation's store of its jobs' output (files, never etcd), what reports bring to it,
what readers get from it, and how long it is kept."""
