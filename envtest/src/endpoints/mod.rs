//! Layer 4, the endpoints (kube-apiserver's `endpoints/handlers`): everything that speaks HTTP
//! about resources. It may call `api`, `faults`, `storage`, `registry` and `admission`; `server`
//! calls it.
//!
//! * this file: what every handler speaks — the decoded request ([`Req`], its query, headers, body
//!   and [`Warnings`]) and the responses ([`json`], [`bytes`](fn@bytes), [`error`] `Status` bodies,
//!   watch [`stream`]s); `server` decodes requests into it and writes its responses.
//! * [`State`]: what the server and the handlers share (the registry layer, settings, faults).
//! * [`serve()`]: a routed request to its handler, discovery, OpenAPI or health.
//! * [`router`]: the URL grammar, query strings and resourceVersion parameters.
//! * [`handlers`]: one handler per verb (get, list, create, update, patch, delete, scale,
//!   eviction), server-side apply, watch, serving at a non-storage version (`versioned`).
//! * [`filter`]: label and field selectors of list, watch and deletecollection.
//! * [`table`]: `as=Table` responses; [`discovery`] and [`openapi`]: the served documents.

pub(crate) mod discovery;
pub(crate) mod filter;
pub(crate) mod handlers;
pub(crate) mod openapi;
pub(crate) mod router;
mod serve;
mod state;
pub(crate) mod table;

pub(crate) use serve::serve;
pub(crate) use state::{Settings, State};

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use serde_json::Value;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use crate::api::protobuf;
use crate::api::status::ApiError;
pub(crate) use crate::api::warning::Warnings;
use crate::endpoints::router::Query;
use crate::registry::ResourceType;

/// A response body: a whole buffer or a stream (watch).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A decoded request (body already read).
pub(crate) struct Req {
    pub method: Method,
    pub query: Query,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Warnings for the client, written as `Warning` headers on the response.
    pub warnings: Warnings,
    /// The type the client asked for, when `handlers::versioned` serves the request at the storage
    /// version (admission reviews name it as `requestKind`).
    pub served_as: Option<Arc<ResourceType>>,
    /// Who sent it (after impersonation), as `auth` authenticated them.
    pub user: Arc<crate::auth::UserInfo>,
}

impl Req {
    /// A header's value as text (`""` when absent or not text). The name is best one of
    /// `http::header`'s constants, which need no parsing.
    pub fn header(&self, name: impl http::header::AsHeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The media type of the body: the Content-Type without parameters.
    pub fn media_type(&self) -> &str {
        self.header(header::CONTENT_TYPE)
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
    }

    /// The Accept header asks for PartialObjectMetadata(List).
    pub fn meta_only(&self) -> bool {
        self.header(header::ACCEPT)
            .contains("as=PartialObjectMetadata")
    }

    /// The Accept header asks for protobuf first (client-go's default for built-in kinds).
    pub fn protobuf(&self) -> bool {
        protobuf::wants(self.header(header::ACCEPT))
    }
}

/// A whole-buffer response (`content_type` is one of the server's own media types).
pub(crate) fn bytes(code: u16, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body).boxed());
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}

/// A JSON response (a `Status` written as Go writes it).
pub(crate) fn json(code: u16, v: &Value) -> Response<Body> {
    object_as(code, v, false)
}

/// An object response in the media type the client asked for: protobuf when `Accept` asks for it
/// first and the kind has a protobuf form (built-ins, `Status`), else JSON (custom resources,
/// as upstream negotiates them).
pub(crate) fn object(code: u16, v: &Value, req: &Req) -> Response<Body> {
    object_as(code, v, req.protobuf())
}

fn object_as(code: u16, v: &Value, protobuf: bool) -> Response<Body> {
    if protobuf {
        match protobuf::encode(v) {
            Ok(b) => return bytes(code, protobuf::MEDIA, Bytes::from(b)),
            Err(error) => tracing::debug!(%error, "answering in JSON: no protobuf form"),
        }
    }
    bytes(code, "application/json", Bytes::from(status_or_json(v)))
}

/// A `Status` as Go's encoder writes it (`api::status::render`), anything else as JSON.
fn status_or_json(v: &Value) -> Vec<u8> {
    if v.get("kind").and_then(Value::as_str) == Some("Status") {
        return crate::api::status::render(v);
    }
    serde_json::to_vec(v).unwrap_or_default()
}

/// A `Status` error response, in JSON (Go's bytes: `api::status::render`).
pub(crate) fn error(e: &ApiError) -> Response<Body> {
    error_as(e, false)
}

/// A `Status` error response, in protobuf when `protobuf` (the client asked for it first, on a
/// route whose kinds have a protobuf form).
pub(crate) fn error_as(e: &ApiError, protobuf: bool) -> Response<Body> {
    let mut r = object_as(e.code, &e.to_value(), protobuf);
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A streaming JSON response (watch): every received buffer is one chunk.
pub(crate) fn stream(content_type: &str, rx: tokio::sync::mpsc::Receiver<Bytes>) -> Response<Body> {
    let s = ReceiverStream::new(rx).map(|b| Ok::<_, Infallible>(Frame::data(b)));
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(s)));
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// A YAML request body as JSON, with YAML 1.2's scalars: only `true` / `false` are booleans,
/// so `name: y` or `value: "on"` stay strings and then decode into their string-typed fields.
pub(crate) fn yaml_value(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let options = serde_saphyr::options! { strict_booleans: true };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| e.to_string())
}

/// The JSON (or YAML) object in a POST/PUT body.
pub(crate) fn decode_body(req: &Req) -> Result<Value, ApiError> {
    decode_body_with(req, None)
}

/// [`decode_body`], and the paths of the keys a JSON body gives twice (none for YAML and
/// protobuf), found in the same pass ([`api::json`](crate::api::json)) for field validation.
pub(crate) fn decode_body_noting_duplicates(req: &Req) -> Result<(Value, Vec<String>), ApiError> {
    let mut dups = Vec::new();
    let v = decode_body_with(req, Some(&mut dups))?;
    Ok((v, dups))
}

fn decode_body_with(req: &Req, dups: Option<&mut Vec<String>>) -> Result<Value, ApiError> {
    let ct = req.header(header::CONTENT_TYPE);
    let media = ct.split(';').next().unwrap_or("").trim();
    let bad_json = |e: serde_json::Error| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    };
    let v: Value = match media {
        "" | "application/json" | "*/*" => match dups {
            Some(dups) => {
                let (v, found) = crate::api::json::decode(&req.body).map_err(bad_json)?;
                *dups = found;
                v
            }
            None => serde_json::from_slice(&req.body).map_err(bad_json)?,
        },
        "application/yaml" | "application/x-yaml" | "text/yaml" => yaml_value(&req.body)
            .map_err(|e| ApiError::bad_request(format!("yaml parse error: {e}")))?,
        "application/vnd.kubernetes.protobuf" => crate::api::protobuf::decode(&req.body)?,
        _ => {
            return Err(ApiError::unsupported_media(
                "application/json, application/yaml",
            ));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}
