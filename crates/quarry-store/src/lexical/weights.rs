//! [`LexicalWeights`]: how much each field of a chunk counts in the lexical leg.

use serde::{Deserialize, Serialize};

use super::{BODY, COMMENTS, CONTAINER, DIRS, FILE, NAME};

/// How much a query term's BM25 score in each field of a chunk counts. A weight of 0 leaves
/// the field out of the query (the benchmark's ablations).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LexicalWeights {
    /// The chunk's symbol name (`parse_config`): a match here is a definition. As much as
    /// the body: the ranking's definition layer raises definitions of the name a query asks
    /// for, and a heavier name field lifts every function named after a common word.
    pub name: f32,
    /// The symbols enclosing it (`Router` for `Router::merge`).
    pub container: f32,
    /// Its file's name without the extension (`router` for `src/router.rs`).
    pub file: f32,
    /// Its file's directories (`src`, `routing`).
    pub dirs: f32,
    /// Its comments and docstrings: what the code says it does, in words.
    pub comments: f32,
    /// Its whole text.
    pub body: f32,
}

impl Default for LexicalWeights {
    fn default() -> Self {
        Self {
            name: 1.0,
            container: 1.0,
            file: 1.5,
            dirs: 0.5,
            comments: 0.5,
            body: 1.0,
        }
    }
}

impl LexicalWeights {
    /// Checks that every weight is finite and at least 0, and one is above 0.
    pub fn validate(&self) -> Result<(), String> {
        let weights = self.fields();
        if let Some((field, weight)) = weights.iter().find(|(_, w)| !w.is_finite() || *w < 0.0) {
            return Err(format!(
                "lexical weight {field} must be finite and at least 0, not {weight}"
            ));
        }
        if weights.iter().all(|(_, w)| *w == 0.0) {
            return Err("every lexical weight is 0: the lexical leg would find nothing".into());
        }
        Ok(())
    }

    /// Each scored field's name and weight, in the schema's order.
    pub(super) fn fields(&self) -> [(&'static str, f32); 6] {
        [
            (NAME, self.name),
            (CONTAINER, self.container),
            (FILE, self.file),
            (DIRS, self.dirs),
            (COMMENTS, self.comments),
            (BODY, self.body),
        ]
    }
}
