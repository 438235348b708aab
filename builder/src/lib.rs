//! ctrl-builder: the builders operator authors start from (controller-runtime's
//! `pkg/builder`). `ControllerBuilder` wires sources, handlers and predicates from
//! `ctrl-runtime` into a controller registered with a manager.
