//! Shared by the integration tests: the default model, provisioned once per test binary.

use std::sync::OnceLock;

use quarry_embed::{DEFAULT_MODEL, ModelDir, Provisioner};

/// The default model's directory, downloaded into the user cache on first use as a user's
/// first run would.
pub fn default_model() -> &'static ModelDir {
    static MODEL: OnceLock<ModelDir> = OnceLock::new();
    MODEL.get_or_init(|| {
        Provisioner::from_env()
            .resolve(&DEFAULT_MODEL)
            .unwrap_or_else(|error| panic!("{error}"))
    })
}
