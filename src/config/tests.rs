//! Loading whole configurations: defaulting, `*`, weights, and the errors kube-scheduler gives.
