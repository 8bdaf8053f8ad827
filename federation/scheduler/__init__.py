"""The global scheduler: in-memory federation state, the cycle over member clusters, dispatch."""
