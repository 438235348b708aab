//! The fleet operator's modules: [`crd`] (the `FleetConfigMap` kind), [`controller`]
//! (one reconcile per member cluster and FleetConfigMap), [`members`] (the local
//! hub's three in-process members) and [`demo`] (the local story).

pub mod controller;
pub mod crd;
pub mod demo;
pub mod members;
