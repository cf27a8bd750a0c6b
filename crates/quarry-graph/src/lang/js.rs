//! JavaScript and TypeScript: `import … from`, `export … from`, `import()`,
//! `require()` and TypeScript's `import x = require()`.

use super::{Found, Sink};
use crate::imports::Import;
use crate::repo::{Repo, join, join_dir};

/// The patterns JavaScript and TypeScript share (a macro so that `concat!` can
/// extend them).
macro_rules! common_patterns {
    () => {
        r#"
(import_statement source: (string (string_fragment) @spec))
(export_statement source: (string (string_fragment) @spec))
(call_expression
  function: (identifier) @function
  arguments: (arguments . (string (string_fragment) @spec))
  (#eq? @function "require"))
(call_expression
  function: (import)
  arguments: (arguments . (string (string_fragment) @spec)))
"#
    };
}

pub(crate) const JAVASCRIPT: &str = common_patterns!();

pub(crate) const TYPESCRIPT: &str = concat!(
    common_patterns!(),
    "(import_require_clause source: (string (string_fragment) @spec))"
);

pub(crate) fn collect(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    let spec = found.text_of("spec");
    if !spec.is_empty() {
        sink.imports.push(Import::Js(spec.to_owned()));
    }
}

/// Extensions tried after an extension-less specifier, TypeScript's first.
const EXTENSIONS: &[&str] = &[
    "ts", "tsx", "d.ts", "js", "jsx", "mjs", "cjs", "mts", "cts", "json",
];

/// A relative specifier (`./a`, `../b/c.js`, `.`), as Node and TypeScript's bundler
/// resolution find it: the exact file, the path with an extension, a `.js` written
/// for a `.ts` source, then the directory's `index` file. Bare specifiers (npm
/// packages, `node:` built-ins, path aliases) are external.
pub(crate) fn resolve(repo: &Repo<'_>, file: u32, spec: &str) -> Vec<u32> {
    let relative = spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../");
    if !relative {
        return Vec::new();
    }
    // Bundlers' `?raw` and `#hash` suffixes are not part of the path.
    let spec = spec.split(['?', '#']).next().unwrap_or(spec);
    let Some(path) = join(repo.key(file).dir(), spec) else {
        return Vec::new();
    };
    let mut candidates = vec![path.clone()];
    candidates.extend(EXTENSIONS.iter().map(|ext| format!("{path}.{ext}")));
    if let Some((stem, ext)) = path.rsplit_once('.') {
        let sources: &[&str] = match ext {
            "js" => &["ts", "tsx"],
            "jsx" => &["tsx"],
            "mjs" => &["mts"],
            "cjs" => &["cts"],
            _ => &[],
        };
        candidates.extend(sources.iter().map(|ext| format!("{stem}.{ext}")));
    }
    candidates.extend(
        EXTENSIONS
            .iter()
            .map(|ext| join_dir(&path, &format!("index.{ext}"))),
    );
    candidates
        .iter()
        .find_map(|candidate| repo.file(candidate))
        .into_iter()
        .collect()
}
