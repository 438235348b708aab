//! The modules of `ctrl-sharder`: its command line and webhook endpoint (`cli`), the
//! manager it runs (`run`), and the local demo (`demo`).

pub mod cli;
pub mod demo;
pub mod run;
