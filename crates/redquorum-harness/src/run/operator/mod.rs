//! A torture run's operator: its calls at a steady pace beside the clients
//! (`operate.rs`: inspections and force-releases through the caller's
//! [`TortureOperator`]) and which lock looks stuck to it (`stuck.rs`: what
//! its inspections saw, per resource, and since when).
//!
//! May import: the plan's [`OperatorPace`](crate::OperatorPace)
//! (`plan.rs`) and `evidence` (the operator log). Must never import
//! `torture.rs` (it starts the operator) or the workload.

mod operate;
mod stuck;

pub(crate) use operate::operate;
pub use operate::{ASK_WAIT, Inspected, NoOperator, TortureOperator};
