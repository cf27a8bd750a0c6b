//! A model directory's file digests, remembered by size and modification time, so that
//! opening a model does not read its weights again (all-MiniLM-L6-v2's 90 MB take 0.3 s to
//! hash) when they did not change: git's index makes the same trade.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::EmbedError;
use crate::provision::sha256_file;

/// The cache's file, in the model directory. Written best-effort: a read-only directory
/// only means hashing at every load.
pub(crate) const CACHE_FILE: &str = ".quarry-digests";

/// The digests a model directory remembers, read once per load and saved when it learned one.
pub(crate) struct DigestCache {
    path: PathBuf,
    entries: Vec<Entry>,
    learned: bool,
}

/// One file's digest and the size and modification time it was taken at.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    size: u64,
    modified_ns: u128,
    sha256: String,
}

impl Entry {
    /// `sha256 size modified_ns name`: the name last, since only it may hold spaces.
    fn parse(line: &str) -> Option<Self> {
        let mut fields = line.splitn(4, ' ');
        let sha256 = fields.next()?;
        let size = fields.next()?.parse().ok()?;
        let modified_ns = fields.next()?.parse().ok()?;
        let name = fields.next()?;
        let well_formed = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        well_formed.then(|| Self {
            name: name.into(),
            size,
            modified_ns,
            sha256: sha256.into(),
        })
    }

    fn line(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.sha256, self.size, self.modified_ns, self.name
        )
    }
}

impl DigestCache {
    /// The cache of `dir`; empty where it is missing or unreadable (lines that do not parse
    /// are dropped, and their files hashed again).
    pub(crate) fn read(dir: &Path) -> Self {
        let path = dir.join(CACHE_FILE);
        let entries = fs::read_to_string(&path)
            .map(|text| text.lines().filter_map(Entry::parse).collect())
            .unwrap_or_default();
        Self {
            path,
            entries,
            learned: false,
        }
    }

    /// The sha256 of the file `name` at `path`, in hex: remembered where its size and
    /// modification time are those it was hashed at, hashed (and remembered) otherwise.
    pub(crate) fn digest(&mut self, path: &Path, name: &str) -> Result<String, EmbedError> {
        let stamp = fs::metadata(path).ok().and_then(|meta| {
            let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
            Some((meta.len(), modified.as_nanos()))
        });
        let remembered = stamp.and_then(|(size, modified_ns)| {
            self.entries
                .iter()
                .find(|e| e.name == name && e.size == size && e.modified_ns == modified_ns)
        });
        if let Some(entry) = remembered {
            return Ok(entry.sha256.clone());
        }
        let sha256 = sha256_file(path)?;
        if let Some((size, modified_ns)) = stamp {
            self.entries.retain(|e| e.name != name);
            self.entries.push(Entry {
                name: name.into(),
                size,
                modified_ns,
                sha256: sha256.clone(),
            });
            self.learned = true;
        }
        Ok(sha256)
    }

    /// Writes the cache back if it learned a digest; a failure is ignored (the cost is
    /// hashing again next time). Call it only once every digest was checked.
    pub(crate) fn save(self) {
        if !self.learned {
            return;
        }
        let text: String = self.entries.iter().map(Entry::line).collect();
        // A unique temporary name, then a rename: two processes loading at once each write
        // a whole file, and a reader never sees half of one.
        let temporary = self
            .path
            .with_extension(format!("{}.tmp", std::process::id()));
        if fs::write(&temporary, text).is_ok() && fs::rename(&temporary, &self.path).is_err() {
            let _ = fs::remove_file(&temporary);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("weights.bin");
        fs::write(&file, b"first").unwrap();
        let mut cache = DigestCache::read(dir.path());
        let first = cache.digest(&file, "weights.bin").unwrap();
        assert_eq!(first, sha256_file(&file).unwrap());
        cache.save();

        // Remembered: a different text under the same size and time is not read again.
        let modified = fs::metadata(&file).unwrap().modified().unwrap();
        fs::write(&file, b"other").unwrap();
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(
            DigestCache::read(dir.path())
                .digest(&file, "weights.bin")
                .unwrap(),
            first
        );

        // A new size (or time) is hashed again.
        fs::write(&file, b"changed").unwrap();
        let mut cache = DigestCache::read(dir.path());
        let changed = cache.digest(&file, "weights.bin").unwrap();
        assert_eq!(changed, sha256_file(&file).unwrap());
        assert_ne!(changed, first);
    }

    #[test]
    fn a_garbled_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        fs::write(&file, b"{}").unwrap();
        fs::write(dir.path().join(CACHE_FILE), "not a digest\n\u{0}\n").unwrap();
        let mut cache = DigestCache::read(dir.path());
        assert_eq!(
            cache.digest(&file, "config.json").unwrap(),
            sha256_file(&file).unwrap()
        );
    }
}
