//! placeholder until the module lands
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    Chat,
    Completions,
}
impl EndpointKind {
    pub fn default_path(self) -> &'static str {
        match self {
            EndpointKind::Chat => "/v1/chat/completions",
            EndpointKind::Completions => "/v1/completions",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
        }
    }
}
