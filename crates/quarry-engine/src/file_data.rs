//! Per-file data: what the index stores beside a file's chunks (its PageRank, links, imports
//! and definitions), each as JSON under a name.

use quarry_store::Batch;

use crate::EngineError;

/// The per-file data name under which a file's import-graph [`quarry_graph::FileScore`] is stored.
pub const PAGERANK_DATA: &str = "pagerank";

/// The per-file data name under which the files a file imports or is imported by are
/// stored, as a JSON list of paths.
pub const LINKS_DATA: &str = "links";

/// The per-file data name under which a project file's [`FileImports`] are stored, taken
/// from the syntax tree the chunker parsed: the import graph is rebuilt from them without
/// reading or parsing a file again.
pub const IMPORTS_DATA: &str = "imports";

/// The file data name under which a file's [`Definition`]s are stored
/// ([`FileDefinitions`]).
pub const DEFINITIONS_DATA: &str = "definitions";

/// Stores `value` as JSON under the file data name `data` of the file at `path`.
pub(crate) fn set_file_data<T: serde::Serialize + ?Sized>(
    batch: &mut Batch<'_>,
    path: &str,
    data: &'static str,
    value: &T,
) -> Result<(), EngineError> {
    let bytes = serde_json::to_vec(value).expect("file data serialises to JSON");
    Ok(batch.set_file_data(path, data, &bytes)?)
}

/// The file data `data` stored for the file at `path`.
pub(crate) fn decode_file_data<T: serde::de::DeserializeOwned>(
    path: &str,
    data: &'static str,
    bytes: &[u8],
) -> Result<T, EngineError> {
    serde_json::from_slice(bytes).map_err(|e| EngineError::CorruptFileData {
        path: path.to_owned(),
        data,
        message: e.to_string(),
    })
}
