//! ctrl-envtest: an embedded, in-process Kubernetes API server.
