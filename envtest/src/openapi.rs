//! OpenAPI v3 schemas served under `/openapi/v3/...`: builtin types and the schemas of
//! installed CRDs. `discovery` lists the documents; this module fills them.
