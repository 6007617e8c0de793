//! The fencing protocol's model check lives in `tests/fence_model.rs`: a
//! package of its own, so that it alone is built optimized in test builds.
