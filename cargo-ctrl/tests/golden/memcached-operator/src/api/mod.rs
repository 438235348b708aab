//! The operator's custom resources, one module per version.

pub mod v1alpha1;
