//! The four envelope messages every Kubernetes protobuf body and watch frame is wrapped in,
//! declared here with prost's derive (field numbers from apimachinery's
//! `pkg/runtime/generated.proto` and `pkg/apis/meta/v1/generated.proto`, vendored in `proto/`):
//! the object inside is read and written through the descriptor pool ([`super::schema`]), so
//! these four are the only fixed types the codec needs. (They came from the `k8s-pb` crate,
//! whose 600 generated types were a tenth of an operator's cold build for these four; the
//! integration tests still check the wire format against it.)

/// `runtime.TypeMeta`: the `apiVersion` and `kind` of the object in an [`Unknown`].
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TypeMeta {
    /// `apiVersion = 1`.
    #[prost(string, optional, tag = "1")]
    pub api_version: Option<String>,
    /// `kind = 2`.
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
}

/// `runtime.Unknown`: the envelope after the `k8s\0` magic (type, raw object bytes, encoding).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Unknown {
    /// `typeMeta = 1`.
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    /// `raw = 2`: the object's own message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub raw: Option<Vec<u8>>,
    /// `contentEncoding = 3`: empty (no compression).
    #[prost(string, optional, tag = "3")]
    pub content_encoding: Option<String>,
    /// `contentType = 4`: empty (protobuf).
    #[prost(string, optional, tag = "4")]
    pub content_type: Option<String>,
}

/// `runtime.RawExtension`: an embedded object's bytes (here a whole `k8s\0` body).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RawExtension {
    /// `raw = 1`.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub raw: Option<Vec<u8>>,
}

/// `metav1.WatchEvent`: one event of a protobuf watch stream.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct WatchEvent {
    /// `type = 1`: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    /// `object = 2`.
    #[prost(message, optional, tag = "2")]
    pub object: Option<RawExtension>,
}
