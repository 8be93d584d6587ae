//! The OpenTelemetry flags of the Output group (docs/integrations.md): the OTLP/HTTP endpoint
//! the run's metrics stream to, what is streamed, and the labels they carry. Resolved in
//! `config::lab::otel`.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OtelArgs {
    /// OTLP/HTTP metrics endpoint URL (host[:port] or http://…; '/v1/metrics' is appended
    /// when the path does not end with it).
    #[arg(long = "otel-url", value_name = "URL", help_heading = "Output")]
    pub otel_url: Option<String>,

    /// Which telemetry domains stream over OTel: 'metrics', 'timing', 'default' (both) or
    /// 'none'. Needs --otel-url.
    #[arg(long = "stream", value_name = "DOMAIN", num_args = 1.., action = clap::ArgAction::Append, help_heading = "Output")]
    pub stream: Vec<String>,

    /// Custom OTel resource attributes as key=value pairs (comma-separated or repeated),
    /// merged into the default resource attributes. Needs --otel-url.
    #[arg(long = "otel-resource-attributes", value_name = "KEY=VALUE", num_args = 1.., action = clap::ArgAction::Append, help_heading = "Output")]
    pub otel_resource_attributes: Vec<String>,

    /// The gen_ai.provider.name of the GenAI semantic conventions (default: inferred from the
    /// URL's host, else '_OTHER'). Needs --otel-url.
    #[arg(long = "gen-ai-provider", value_name = "NAME", help_heading = "Output")]
    pub gen_ai_provider: Option<String>,
}
