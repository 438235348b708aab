//! [`FileExporter`]: spans written to a file as OTLP JSON lines, to see or check a trace with
//! no collector running.
//!
//! The format is the OpenTelemetry specification's OTLP file exporter
//! (`specification/protocol/file-exporter.md`): each export is one line holding an
//! `ExportTraceServiceRequest` in the OTLP/JSON encoding (trace and span ids as hex strings,
//! attributes as `{key, value: {stringValue}}`), which the collector's `otlpjsonfile`
//! receiver reads back. The encoding is `opentelemetry-proto`'s (the message types and the
//! SDK-to-protocol conversion the OTLP exporter uses, with its serde feature); this module
//! only writes the lines. [`super::layer_from_env`] picks it for
//! `OTEL_TRACES_EXPORTER=otlp_file` (the declarative configuration's `otlp_file/development`
//! exporter, also accepted under that name), writing to `OTEL_EXPORTER_OTLP_FILE_PATH`.

use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::Path;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use parking_lot::Mutex;

/// The path [`super::layer_from_env`] writes to when `OTEL_EXPORTER_OTLP_FILE_PATH` is unset.
pub const DEFAULT_PATH: &str = "traces.jsonl";

/// Writes each exported batch of spans to a file as one OTLP/JSON line (see the module doc).
#[derive(Debug)]
pub struct FileExporter {
    file: Mutex<Option<LineWriter<File>>>,
    resource: ResourceAttributesWithSchema,
}

impl FileExporter {
    /// An exporter appending to `path` (created if absent).
    pub fn create(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(Some(LineWriter::new(file))),
            resource: ResourceAttributesWithSchema::from(&Resource::builder_empty().build()),
        })
    }

    /// The OTLP/JSON line of `batch`.
    fn line(&self, batch: Vec<SpanData>) -> Result<String, serde_json::Error> {
        let request = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch, &self.resource),
        };
        serde_json::to_string(&request)
    }
}

impl SpanExporter for FileExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let line = self
            .line(batch)
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        let mut file = self.file.lock();
        let file = file.as_mut().ok_or(OTelSdkError::AlreadyShutdown)?;
        writeln!(file, "{line}").map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        match self.file.get_mut() {
            Some(f) => f
                .flush()
                .map_err(|e| OTelSdkError::InternalFailure(e.to_string())),
            None => Ok(()),
        }
    }

    fn shutdown_with_timeout(&mut self, _: std::time::Duration) -> OTelSdkResult {
        let flushed = self.force_flush();
        *self.file.get_mut() = None;
        flushed
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = ResourceAttributesWithSchema::from(resource);
    }
}
