//! Corpora: real projects pinned by exact version in `corpora.yaml`, fetched with the
//! ordinary registry clients (cargo, pip, npm, apt-get) into a cache, or local directories.
//!
//! Each fetched corpus is checked against its committed manifest
//! (`manifests/<name>.txt`: a hash, the line count and the path of every file), so a case's
//! paths and line spans can be checked without fetching, and a registry that served other
//! bytes for the same version is caught.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use globset::{Glob, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::files::{Index, copy_files, list_files};

/// `corpora.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorporaFile {
    /// The corpora, in report order.
    pub corpora: Vec<Corpus>,
}

/// One pinned project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corpus {
    /// A short name; cases live in `cases/<name>.yaml`.
    pub name: String,
    /// Its main language, for the report.
    pub language: String,
    /// Where it comes from.
    pub source: Source,
    /// The directory inside the package that is the corpus (`src/zlib`); the whole package
    /// when absent.
    #[serde(default)]
    pub root: Option<String>,
    /// Globs (relative to `root`) of files left out: bundles, translations, vendored copies.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// `full` (the default) or `smoke` (the small suite CI runs).
    #[serde(default)]
    pub suite: Suite,
    /// A group of corpora that reports show apart (`symbols`: the corpora added to see
    /// symbol lookups, C and C++, and large repositories).
    #[serde(default)]
    pub group: Option<String>,
}

/// Which suite a corpus belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// The benchmark proper.
    #[default]
    Full,
    /// A fixture-sized suite that runs in CI.
    Smoke,
}

/// Where a corpus comes from: exactly one of `cargo`, `pip`, `npm`, `debian`,
/// `debian-source` (each with `version`) or `path` (relative to `corpora.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// A crate on crates.io.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo: Option<String>,
    /// A source distribution on PyPI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pip: Option<String>,
    /// A package on npm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    /// A Debian binary package that installs sources (`golang-*-dev`, `ruby-*`, `php-*`,
    /// `lua-*`, header-only `-dev` libraries), fetched with `apt-get download` and unpacked
    /// with `dpkg-deb -x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian: Option<String>,
    /// A Debian source package of bookworm, for sources no binary package installs (C#,
    /// Java applications): downloaded with `apt-get source` through a deb-src list of its
    /// own and unpacked with `dpkg-source -x` without Debian's patches, so the corpus is
    /// upstream's tree as Debian repacked it.
    #[serde(
        default,
        rename = "debian-source",
        skip_serializing_if = "Option::is_none"
    )]
    pub debian_source: Option<String>,
    /// A local directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The exact version of a registry package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

enum Origin<'a> {
    Cargo(&'a str, &'a str),
    Pip(&'a str, &'a str),
    Npm(&'a str, &'a str),
    Debian(&'a str, &'a str),
    DebianSource(&'a str, &'a str),
    Local(&'a Path),
}

impl Source {
    fn origin(&self) -> Result<Origin<'_>, String> {
        let version = self.version.as_deref();
        type Registry<'a> = fn(&'a str, &'a str) -> Origin<'a>;
        let registries: [(Option<&String>, Registry<'_>); 5] = [
            (self.cargo.as_ref(), Origin::Cargo),
            (self.pip.as_ref(), Origin::Pip),
            (self.npm.as_ref(), Origin::Npm),
            (self.debian.as_ref(), Origin::Debian),
            (self.debian_source.as_ref(), Origin::DebianSource),
        ];
        let mut named = registries
            .into_iter()
            .filter_map(|(name, origin)| Some((name?, origin)));
        match (named.next(), named.next(), &self.path, version) {
            (Some((name, origin)), None, None, Some(v)) => Ok(origin(name, v)),
            (None, None, Some(path), None) => Ok(Origin::Local(path)),
            _ => Err(
                "a source is one of `cargo`, `pip`, `npm`, `debian` or `debian-source` \
                 with an exact `version`, or a `path`"
                    .into(),
            ),
        }
    }
}

impl CorporaFile {
    /// Reads and checks `corpora.yaml`.
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let text = fs::read_to_string(path).map_err(|source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: CorporaFile = serde_norway::from_str(&text).map_err(|e| BenchError::Yaml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut names = std::collections::HashSet::new();
        for corpus in &file.corpora {
            let invalid = |message: String| BenchError::InvalidCorpus {
                name: corpus.name.clone(),
                message,
            };
            corpus.source.origin().map_err(invalid)?;
            if !names.insert(corpus.name.as_str()) {
                return Err(invalid("the name appears twice".into()));
            }
            if let Some(v) = &corpus.source.version
                && !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+~:".contains(c))
            {
                return Err(invalid(format!("{v:?} is not an exact version")));
            }
        }
        Ok(file)
    }

    /// The corpus called `name`.
    pub fn get(&self, name: &str) -> Option<&Corpus> {
        self.corpora.iter().find(|c| c.name == name)
    }
}

impl Corpus {
    /// `name-version`, or `name` for a local directory: its directory in the cache.
    pub fn key(&self) -> String {
        match &self.source.version {
            Some(version) => format!("{}-{version}", self.name),
            None => self.name.clone(),
        }
    }

    /// Where it comes from, in words (`cargo axum 0.8.9`).
    pub fn describe(&self) -> String {
        match self.source.origin() {
            Ok(Origin::Cargo(name, v)) => format!("crates.io {name} {v}"),
            Ok(Origin::Pip(name, v)) => format!("PyPI {name} {v} (sdist)"),
            Ok(Origin::Npm(name, v)) => format!("npm {name} {v}"),
            Ok(Origin::Debian(name, v)) => format!("Debian {name} {v}"),
            Ok(Origin::DebianSource(name, v)) => format!("Debian source {name} {v}"),
            Ok(Origin::Local(path)) => format!("local {}", path.display()),
            Err(_) => "invalid source".into(),
        }
    }

    /// The corpus's files, fetched into `cache` on first use: `cache/<key>/`, or the local
    /// directory itself (`suite_dir` is the folder holding `corpora.yaml`).
    ///
    /// A fetched corpus must match its manifest in `suite_dir/manifests/`; a missing
    /// manifest is written (commit it).
    pub fn fetch(&self, suite_dir: &Path, cache: &Path) -> Result<PathBuf, BenchError> {
        let origin = self
            .source
            .origin()
            .map_err(|message| BenchError::InvalidCorpus {
                name: self.name.clone(),
                message,
            })?;
        if let Origin::Local(path) = origin {
            let dir = suite_dir.join(path);
            if !dir.is_dir() {
                return Err(self.failed(format!("{} is not a directory", dir.display())));
            }
            return Ok(dir);
        }
        let dir = cache.join(self.key());
        if !dir.is_dir() {
            self.download(origin, cache, &dir)?;
        }
        self.check_manifest(suite_dir, &dir)?;
        Ok(dir)
    }

    fn failed(&self, message: String) -> BenchError {
        BenchError::Fetch {
            corpus: self.name.clone(),
            message,
        }
    }

    /// Downloads and unpacks the package, then keeps `root` minus `exclude` as `dir`
    /// (renamed into place, so an interrupted fetch leaves no half corpus).
    fn download(&self, origin: Origin<'_>, cache: &Path, dir: &Path) -> Result<(), BenchError> {
        fs::create_dir_all(cache).map_err(BenchError::io(cache))?;
        let work = tempfile::tempdir_in(cache).map_err(BenchError::io(cache))?;
        let unpacked = work.path().join("unpacked");
        fs::create_dir(&unpacked).map_err(BenchError::io(&unpacked))?;
        let package = match origin {
            Origin::Cargo(name, version) => self.cargo_package(work.path(), name, version)?,
            Origin::Pip(name, version) => {
                let spec = format!("{name}=={version}");
                let args = ["-m", "pip", "download", "--no-deps", "--no-binary", ":all:"];
                self.run(
                    Command::new("python3")
                        .args(args)
                        .arg(&spec)
                        .arg("-d")
                        .arg(work.path()),
                )?;
                self.unpack_single(work.path(), &unpacked)?
            }
            Origin::Npm(name, version) => {
                let spec = format!("{name}@{version}");
                let mut npm = Command::new("npm");
                npm.args(["pack", "--silent", &spec, "--pack-destination"])
                    .arg(work.path());
                self.run(&mut npm)?;
                self.unpack_single(work.path(), &unpacked)?
            }
            Origin::Debian(name, version) => {
                let spec = format!("{name}={version}");
                self.run(
                    Command::new("apt-get")
                        .args(["download", "--quiet", &spec])
                        .current_dir(work.path()),
                )?;
                let deb = fs::read_dir(work.path())
                    .map_err(BenchError::io(work.path()))?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|e| e == "deb"))
                    .ok_or_else(|| self.failed("apt-get downloaded no .deb".into()))?;
                self.run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
                unpacked
            }
            Origin::DebianSource(name, version) => {
                self.debian_source(work.path(), name, version, &unpacked)?
            }
            Origin::Local(_) => unreachable!("local corpora are not downloaded"),
        };
        let root = match &self.root {
            Some(root) => package.join(root),
            None => package,
        };
        let kept = work.path().join("kept");
        self.copy_tree(&root, &kept)?;
        fs::rename(&kept, dir).map_err(BenchError::io(dir))?;
        Ok(())
    }

    /// The crate's sources as cargo unpacks them: resolved through a throwaway manifest
    /// that depends on exactly this version.
    fn cargo_package(&self, work: &Path, name: &str, version: &str) -> Result<PathBuf, BenchError> {
        let manifest = work.join("Cargo.toml");
        let text = format!(
            "[package]\nname = \"quarry-bench-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             [lib]\npath = \"lib.rs\"\n[dependencies]\n\
             {name} = {{ version = \"={version}\", default-features = false }}\n"
        );
        fs::write(&manifest, text).map_err(|source| BenchError::Io {
            path: manifest.clone(),
            source,
        })?;
        let output = self.run(
            Command::new("cargo")
                .args(["metadata", "--format-version", "1", "--manifest-path"])
                .arg(&manifest),
        )?;
        let metadata: serde_json::Value = serde_json::from_slice(&output)
            .map_err(|e| self.failed(format!("cargo metadata printed no JSON: {e}")))?;
        metadata["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == name && p["version"] == version)
            .and_then(|p| p["manifest_path"].as_str())
            .and_then(|m| Path::new(m).parent().map(Path::to_path_buf))
            .ok_or_else(|| self.failed(format!("cargo did not resolve {name} {version}")))
    }

    /// The source package's tree in `into`: the deb-src list and apt's lists live in `work`
    /// (the machine's apt setup needs no deb-src line, and its caches stay untouched).
    fn debian_source(
        &self,
        work: &Path,
        name: &str,
        version: &str,
        into: &Path,
    ) -> Result<PathBuf, BenchError> {
        let list = work.join("sources.list");
        fs::write(&list, DEB_SRC).map_err(BenchError::io(&list))?;
        let lists = work.join("lists");
        let partial = lists.join("partial");
        fs::create_dir_all(&partial).map_err(BenchError::io(&partial))?;
        let options = [
            format!("Dir::Etc::SourceList={}", list.display()),
            "Dir::Etc::SourceParts=/dev/null".to_owned(),
            format!("Dir::State::Lists={}", lists.display()),
            format!("Dir::Cache={}", work.join("cache").display()),
        ];
        let apt = |args: &[&str]| {
            let mut command = Command::new("apt-get");
            for option in &options {
                command.arg("-o").arg(option);
            }
            command.args(args).current_dir(work);
            command
        };
        self.run(&mut apt(&["update", "--quiet"]))?;
        let spec = format!("{name}={version}");
        self.run(&mut apt(&["source", "--download-only", "--quiet", &spec]))?;
        let dsc = fs::read_dir(work)
            .map_err(BenchError::io(work))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "dsc"))
            .ok_or_else(|| self.failed("apt-get downloaded no .dsc".into()))?;
        let tree = into.join(name);
        self.run(
            Command::new("dpkg-source")
                .args(["--skip-patches", "-x"])
                .arg(&dsc)
                .arg(&tree),
        )?;
        Ok(tree)
    }

    /// Unpacks the one archive in `work` into `into` and returns its single top-level
    /// directory (`package/`, `flask-3.1.0/`).
    fn unpack_single(&self, work: &Path, into: &Path) -> Result<PathBuf, BenchError> {
        let archive = fs::read_dir(work)
            .map_err(|source| BenchError::Io {
                path: work.to_path_buf(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_file())
            .ok_or_else(|| self.failed("the registry client downloaded nothing".into()))?;
        let name = archive.to_string_lossy();
        if name.ends_with(".zip") {
            self.run(
                Command::new("python3")
                    .args(["-m", "zipfile", "-e"])
                    .arg(&archive)
                    .arg(into),
            )?;
        } else {
            self.run(
                Command::new("tar")
                    .arg("xzf")
                    .arg(&archive)
                    .arg("-C")
                    .arg(into),
            )?;
        }
        let entries: Vec<PathBuf> = fs::read_dir(into)
            .map_err(|source| BenchError::Io {
                path: into.to_path_buf(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        match entries.as_slice() {
            [single] if single.is_dir() => Ok(single.clone()),
            _ => Ok(into.to_path_buf()),
        }
    }

    /// Copies the files under `from` that no `exclude` glob matches into `to`.
    fn copy_tree(&self, from: &Path, to: &Path) -> Result<(), BenchError> {
        let mut globs = GlobSetBuilder::new();
        for pattern in &self.exclude {
            let glob =
                Glob::new(pattern).map_err(|e| self.failed(format!("exclude {pattern:?}: {e}")))?;
            globs.add(glob);
        }
        let exclude = globs.build().map_err(|e| self.failed(e.to_string()))?;
        if !from.is_dir() {
            return Err(self.failed(format!("the package has no {}", from.display())));
        }
        let files = list_files(from, Index::Skip)?;
        let kept = files.iter().filter(|relative| {
            !exclude.is_match(relative) && !CLIENT_MARKERS.contains(&relative.as_str())
        });
        copy_files(from, to, kept.map(String::as_str))?;
        Ok(())
    }

    fn run(&self, command: &mut Command) -> Result<Vec<u8>, BenchError> {
        let program = command.get_program().to_string_lossy().into_owned();
        let output = command
            .output()
            .map_err(|e| self.failed(format!("could not run {program}: {e} (is it installed?)")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(self.failed(format!("{program} failed: {}", tail.join("\n"))));
        }
        Ok(output.stdout)
    }

    fn check_manifest(&self, suite_dir: &Path, dir: &Path) -> Result<(), BenchError> {
        let path = manifest_path(suite_dir, &self.name);
        let actual = Manifest::of(dir)?;
        if !path.exists() {
            actual.write(&path, &self.describe())?;
            return Ok(());
        }
        let expected = Manifest::load(&path)?;
        let differences = expected.differences(&actual);
        if differences.is_empty() {
            return Ok(());
        }
        Err(self.failed(format!(
            "{} differs from its manifest {} in {} files, first {}; if the pin changed on \
             purpose, delete the manifest and fetch again to write a new one",
            dir.display(),
            path.display(),
            differences.len(),
            differences[0],
        )))
    }
}

/// Where `debian-source` corpora come from: the archive the pins were read from.
const DEB_SRC: &str = "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
                       http://deb.debian.org/debian bookworm main\n";

/// Files a registry client writes beside a package's own (cargo's unpack marker): they
/// differ between client versions, so they are not part of a corpus.
const CLIENT_MARKERS: [&str; 1] = [".cargo-ok"];

/// `suite_dir/manifests/<name>.txt`.
pub fn manifest_path(suite_dir: &Path, name: &str) -> PathBuf {
    suite_dir.join("manifests").join(format!("{name}.txt"))
}

/// What a corpus holds: per file, a content hash and a line count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Path -> (XXH3 of the bytes, lines).
    pub files: BTreeMap<String, (u64, usize)>,
}

impl Manifest {
    /// The manifest of the files under `dir` (leaving out an index kept there).
    pub fn of(dir: &Path) -> Result<Self, BenchError> {
        let mut files = BTreeMap::new();
        for relative in list_files(dir, Index::Skip)? {
            let path = dir.join(&relative);
            let bytes = fs::read(&path).map_err(|source| BenchError::Io { path, source })?;
            let lines = bytes.split(|&b| b == b'\n').count() - usize::from(bytes.ends_with(b"\n"));
            files.insert(relative, (quarry_changes::content_hash(&bytes), lines));
        }
        Ok(Manifest { files })
    }

    /// Reads a manifest file.
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let text = fs::read_to_string(path).map_err(|source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut files = BTreeMap::new();
        for (number, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let mut fields = line.splitn(3, ' ');
            let parsed = (|| {
                let hash = u64::from_str_radix(fields.next()?, 16).ok()?;
                let lines = fields.next()?.parse().ok()?;
                Some((fields.next()?.to_owned(), (hash, lines)))
            })();
            let (file, entry) = parsed.ok_or_else(|| BenchError::InvalidManifest {
                path: path.to_path_buf(),
                line: number + 1,
            })?;
            files.insert(file, entry);
        }
        Ok(Manifest { files })
    }

    /// Writes the manifest, headed by where the corpus came from.
    pub fn write(&self, path: &Path, origin: &str) -> Result<(), BenchError> {
        let mut text = format!(
            "# {origin}: XXH3 of each file, its line count, its path. Written by the first\n\
             # fetch; a later fetch must match it.\n"
        );
        for (file, (hash, lines)) in &self.files {
            text.push_str(&format!("{hash:016x} {lines} {file}\n"));
        }
        let io = |source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io)?;
        }
        fs::write(path, text).map_err(io)
    }

    /// The paths that differ (missing, extra or changed), sorted.
    pub fn differences(&self, other: &Manifest) -> Vec<String> {
        let mut paths: Vec<String> = self
            .files
            .iter()
            .filter(|(path, entry)| other.files.get(*path) != Some(entry))
            .map(|(path, _)| path.clone())
            .chain(
                other
                    .files
                    .keys()
                    .filter(|p| !self.files.contains_key(*p))
                    .cloned(),
            )
            .collect();
        paths.sort();
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_exactly_one_origin() {
        let yaml =
            |source: &str| format!("corpora:\n  - {{name: x, language: rust, source: {source}}}\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpora.yaml");
        let load = |text: String| {
            fs::write(&path, text).unwrap();
            CorporaFile::load(&path)
        };
        assert!(load(yaml("{cargo: axum, version: 0.8.9}")).is_ok());
        assert!(load(yaml("{path: ../fixtures}")).is_ok());
        assert!(
            load(yaml(
                "{debian: libspdlog-dev, version: \"1:1.10.0+ds-0.4\"}"
            ))
            .is_ok()
        );
        let file = load(yaml("{debian-source: josm, version: 0.0.svn18646+dfsg-1}")).unwrap();
        assert_eq!(
            file.corpora[0].describe(),
            "Debian source josm 0.0.svn18646+dfsg-1"
        );
        for bad in [
            "{debian: lua-penlight, pip: x, version: 1}",
            "{debian-source: mono, debian: mono, version: 1}",
            "{debian-source: mono}",
            "{cargo: axum}",
            "{cargo: axum, npm: x, version: 1}",
            "{path: a, version: 1}",
        ] {
            let error = load(yaml(bad)).unwrap_err().to_string();
            assert!(
                error.contains("exactly") || error.contains("one of"),
                "{bad}: {error}"
            );
        }
        assert!(load(yaml("{cargo: axum, version: ^0.8}")).is_err());
    }

    #[test]
    fn manifests_round_trip_and_name_differences() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src/.quarry")).unwrap();
        fs::create_dir_all(dir.path().join(".quarry")).unwrap();
        fs::write(dir.path().join(".quarry/index.redb"), "x").unwrap();
        fs::write(dir.path().join("src/a.rs"), "fn a() {}\n\nfn b() {}\n").unwrap();
        fs::write(dir.path().join("b.py"), "x = 1").unwrap();
        let manifest = Manifest::of(dir.path()).unwrap();
        assert_eq!(
            manifest.files.keys().collect::<Vec<_>>(),
            ["b.py", "src/a.rs"]
        );
        assert_eq!(manifest.files["src/a.rs"].1, 3);
        assert_eq!(manifest.files["b.py"].1, 1);
        let elsewhere = tempfile::tempdir().unwrap();
        let path = elsewhere.path().join("manifests/m.txt");
        manifest.write(&path, "test").unwrap();
        assert_eq!(Manifest::load(&path).unwrap(), manifest);
        fs::write(dir.path().join("b.py"), "x = 2").unwrap();
        fs::write(dir.path().join("c.js"), "").unwrap();
        let changed = Manifest::of(dir.path()).unwrap();
        assert_eq!(manifest.differences(&changed), ["b.py", "c.js"]);
    }
}
