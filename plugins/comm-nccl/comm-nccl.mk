## plugins/comm-nccl
