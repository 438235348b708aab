//! Work-queue benchmark harness (placeholder until the harness lands).
fn main() {}
