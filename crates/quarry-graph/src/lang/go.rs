//! Go: import paths, resolved to the package directories of the repository's modules.

use super::{Found, Sink};
use crate::imports::Import;
use crate::repo::{Repo, join_dir};

pub(crate) const QUERY: &str = r#"
(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @spec))
"#;

pub(crate) fn collect(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    sink.imports
        .push(Import::Go(found.text_of("spec").to_owned()));
}

/// The `module` line of a `go.mod`.
pub(crate) fn module_path(go_mod: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let line = line.split("//").next().unwrap_or_default().trim();
        let path = line.strip_prefix("module")?;
        path.starts_with(char::is_whitespace)
            .then(|| path.trim().trim_matches('"').to_owned())
    })
}

/// An import path inside one of the repository's modules (the longest module path
/// that prefixes it) is the package directory below that module's `go.mod`: every
/// `.go` file directly in it except tests. Others (the standard library,
/// dependencies) are external.
pub(crate) fn resolve(repo: &Repo<'_>, path: &str) -> Vec<u32> {
    for (module, dir) in &repo.go_modules {
        let rest = if path == module {
            ""
        } else if let Some(rest) = path
            .strip_prefix(module.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
        {
            rest
        } else {
            continue;
        };
        let package = if rest.is_empty() {
            dir.clone()
        } else {
            join_dir(dir, rest)
        };
        return repo
            .files_in(&package)
            .iter()
            .copied()
            .filter(|&id| {
                let name = repo.key(id).file_name();
                name.ends_with(".go") && !name.ends_with("_test.go")
            })
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lines() {
        assert_eq!(
            module_path("// comment\nmodule example.com/shop // the shop\n\ngo 1.22\n").as_deref(),
            Some("example.com/shop")
        );
        assert_eq!(
            module_path("module \"quoted.org/x\"\n").as_deref(),
            Some("quoted.org/x")
        );
        assert_eq!(module_path("modules x\n"), None);
    }
}
