//! What an index records about itself (its schema version and [`IndexSettings`]), recorded
//! by the first writer and checked by every later handle.

use std::time::{SystemTime, UNIX_EPOCH};

use redb::ReadableTable;

use super::{Handle, Store, database_error, decode};
use crate::StoreError;
use crate::records::{
    CHUNKS, DRIFT, DRIFT_BASE, FILE_DATA, FILES, IndexSettings, META, PENDING, SCHEMA_VERSION,
    VECTORS, encode, meta_keys,
};

impl Store {
    /// Records the settings in a new index (creating every table), or checks an existing
    /// index's against this handle's.
    pub(super) fn check_or_record_settings(&self) -> Result<(), StoreError> {
        let Handle::Writer(db) = &self.db else {
            unreachable!("only a writer records settings")
        };
        let error = |e: redb::Error| database_error(&self.path, e);
        let txn = db.begin_write().map_err(|e| error(e.into()))?;
        {
            // Readers expect every table, even in an empty index.
            txn.open_table(FILES).map_err(|e| error(e.into()))?;
            txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
            txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
            txn.open_table(DRIFT).map_err(|e| error(e.into()))?;
            txn.open_table(PENDING).map_err(|e| error(e.into()))?;
            txn.open_table(DRIFT_BASE).map_err(|e| error(e.into()))?;
            txn.open_table(FILE_DATA).map_err(|e| error(e.into()))?;
            let mut meta = txn.open_table(META).map_err(|e| error(e.into()))?;
            let stored = stored_settings(&meta).map_err(|e| error(e.into()))?;
            if stored.version.is_none() {
                meta.insert(meta_keys::SCHEMA_VERSION, &SCHEMA_VERSION.to_le_bytes()[..])
                    .map_err(|e| error(e.into()))?;
                meta.insert(meta_keys::SETTINGS, &encode(&self.settings)[..])
                    .map_err(|e| error(e.into()))?;
                let created = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64);
                meta.insert(meta_keys::GENERATION, &created.to_le_bytes()[..])
                    .map_err(|e| error(e.into()))?;
            } else {
                self.check_stored(stored)?;
            }
        }
        txn.commit().map_err(|e| error(e.into()))
    }

    /// Compares what an existing index records with what this handle was opened for.
    pub(super) fn check_stored(&self, stored: StoredSettings) -> Result<(), StoreError> {
        match (stored.version, stored.settings) {
            (Some(found), _) if found != SCHEMA_VERSION => Err(StoreError::SchemaMismatch {
                path: self.path.clone(),
                found,
                expected: SCHEMA_VERSION,
            }),
            (Some(_), Some(Ok(stored))) if stored != self.settings => {
                Err(StoreError::SettingsMismatch {
                    path: self.path.clone(),
                    stored: describe(&stored),
                    wanted: describe(&self.settings),
                })
            }
            (Some(_), Some(Ok(_))) => Ok(()),
            _ => Err(self.corrupt("the index settings are missing or unreadable".into())),
        }
    }
}

/// What an index records about itself; `None` where it records nothing (a new index).
pub(super) struct StoredSettings {
    pub(super) version: Option<u32>,
    pub(super) settings: Option<Result<IndexSettings, String>>,
}

pub(super) fn stored_settings(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<StoredSettings, redb::StorageError> {
    Ok(StoredSettings {
        version: meta
            .get(meta_keys::SCHEMA_VERSION)?
            .map(|v| decode_version(v.value())),
        settings: meta.get(meta_keys::SETTINGS)?.map(|v| decode(v.value())),
    })
}

fn decode_version(bytes: &[u8]) -> u32 {
    bytes.try_into().map(u32::from_le_bytes).unwrap_or(0)
}

fn describe(settings: &IndexSettings) -> String {
    format!(
        "model {} ({} dimensions), chunker {}",
        settings.model, settings.dimensions, settings.chunker
    )
}
