//! The [`Chunk`] type and its parts.

use std::fmt;
use std::ops::Range;

use crate::StoredChunk;

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ChunkKind {
    /// A free function.
    Function,
    /// A function inside a container (impl, class, module...).
    Method,
    /// A class or object.
    Class,
    /// A struct, record or union.
    Struct,
    /// An enum.
    Enum,
    /// A trait, protocol or type class.
    Trait,
    /// An interface.
    Interface,
    /// An impl block, extension or type-class instance.
    Impl,
    /// A module or namespace.
    Module,
    /// A type alias or type definition.
    Type,
    /// A macro definition.
    Macro,
    /// A test block (Zig `test`, and the like).
    Test,
    /// The signature and fields of a container that was split into its members.
    Header,
    /// Module-level code: imports, constants, statements, small declarations.
    Block,
    /// A Markdown section (a heading and its text).
    Section,
    /// A window of lines from a file without structure quarry understands.
    Window,
}

impl ChunkKind {
    /// A short lower-case name, stable across releases.
    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Trait => "trait",
            ChunkKind::Interface => "interface",
            ChunkKind::Impl => "impl",
            ChunkKind::Module => "module",
            ChunkKind::Type => "type",
            ChunkKind::Macro => "macro",
            ChunkKind::Test => "test",
            ChunkKind::Header => "header",
            ChunkKind::Block => "block",
            ChunkKind::Section => "section",
            ChunkKind::Window => "window",
        }
    }

    /// Whether it defines a type or a module (a class, struct, enum, trait, interface,
    /// type alias, module or namespace), what a capitalised name usually stands for.
    pub fn is_type(self) -> bool {
        use ChunkKind::*;
        matches!(
            self,
            Class | Struct | Enum | Trait | Interface | Type | Module
        )
    }
}

impl fmt::Display for ChunkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every [`ChunkKind`], in declaration order.
pub const ALL_KINDS: [ChunkKind; 16] = [
    ChunkKind::Function,
    ChunkKind::Method,
    ChunkKind::Class,
    ChunkKind::Struct,
    ChunkKind::Enum,
    ChunkKind::Trait,
    ChunkKind::Interface,
    ChunkKind::Impl,
    ChunkKind::Module,
    ChunkKind::Type,
    ChunkKind::Macro,
    ChunkKind::Test,
    ChunkKind::Header,
    ChunkKind::Block,
    ChunkKind::Section,
    ChunkKind::Window,
];

/// The error for a kind name [`ChunkKind::from_str`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown chunk kind {0:?}")]
pub struct UnknownKind(pub String);

impl std::str::FromStr for ChunkKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_KINDS
            .iter()
            .copied()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A kind is stored by its [`ChunkKind::name`], as a [`Language`](crate::Language) is by its name.
impl serde::Serialize for ChunkKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for ChunkKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A chunk's stable identity: a 128-bit hash of its path, symbol path and text.
///
/// Unchanged code keeps its id when the file around it changes, so the index
/// can keep its vector instead of embedding it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkId(pub u128);

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// The error for a string that is not 32 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid chunk id {0:?}: expected 32 hexadecimal digits")]
pub struct InvalidChunkId(pub String);

impl std::str::FromStr for ChunkId {
    type Err = InvalidChunkId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 32 {
            return Err(InvalidChunkId(s.to_owned()));
        }
        u128::from_str_radix(s, 16)
            .map(ChunkId)
            .map_err(|_| InvalidChunkId(s.to_owned()))
    }
}

/// The start of a chunk id, as a person types it: 8 to 32 hex digits, like a short git
/// commit id. It names the ids in [`ChunkIdPrefix::range`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkIdPrefix {
    value: u128,
    digits: u32,
}

impl ChunkIdPrefix {
    /// The fewest digits a prefix may have: fewer would name many chunks of a large index.
    pub const MIN_DIGITS: usize = 8;

    /// The ids that start with this prefix (one id when it has all 32 digits).
    pub fn range(&self) -> std::ops::RangeInclusive<u128> {
        let free_bits = 4 * (32 - self.digits);
        let low = self.value.checked_shl(free_bits).unwrap_or(0);
        let high = low | u128::MAX.checked_shr(128 - free_bits).unwrap_or(0);
        low..=high
    }

    /// The whole id, when the prefix has all 32 digits.
    pub fn whole(&self) -> Option<ChunkId> {
        (self.digits == 32).then_some(ChunkId(self.value))
    }
}

impl fmt::Display for ChunkIdPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:0width$x}", self.value, width = self.digits as usize)
    }
}

impl std::str::FromStr for ChunkIdPrefix {
    type Err = InvalidChunkId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s.len();
        if !(Self::MIN_DIGITS..=32).contains(&digits) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(InvalidChunkId(s.to_owned()));
        }
        let value = u128::from_str_radix(s, 16).map_err(|_| InvalidChunkId(s.to_owned()))?;
        Ok(Self {
            value,
            digits: digits as u32,
        })
    }
}

/// One piece of a file, sized for the embedding model and readable on its own: the
/// [`StoredChunk`] the index keeps, and what only the chunker and the embedder use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Where the chunk is, what it is and its text, as the index stores it.
    pub stored: StoredChunk,
    /// Byte range in the file; it covers exactly the lines of `stored`.
    pub byte_range: Range<usize>,
    /// The text given to the embedding model: the text behind a short header.
    pub embed_text: String,
    /// For an item split into several chunks: this part's index and the number of parts.
    pub part: Option<(usize, usize)>,
    /// The chunk exceeds the budget because it is a single line that cannot be split.
    pub oversized: bool,
}

/// A one-line summary: `12-30 method Index::search [part 1/2] (oversized)`.
impl fmt::Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chunk = &self.stored;
        write!(f, "{}-{} {}", chunk.start_line, chunk.end_line, chunk.kind)?;
        match chunk.symbol_path() {
            Some(symbol) => write!(f, " {symbol}")?,
            None if !chunk.container.is_empty() => write!(f, " in {}", chunk.container.join("::"))?,
            None => {}
        }
        if let Some((part, parts)) = self.part {
            write!(f, " [part {part}/{parts}]")?;
        }
        if self.oversized {
            f.write_str(" (oversized)")?;
        }
        Ok(())
    }
}

pub(crate) fn symbol_path(container: &[String], name: &str) -> String {
    let mut path = container.join("::");
    if !path.is_empty() {
        path.push_str("::");
    }
    path.push_str(name);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip_and_are_stored_as_names() {
        for kind in ALL_KINDS {
            assert_eq!(kind.name().parse::<ChunkKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("{:?}", kind.name()));
            assert_eq!(serde_json::from_str::<ChunkKind>(&json).unwrap(), kind);
        }
        assert!("lambda".parse::<ChunkKind>().is_err());
    }

    #[test]
    fn a_prefix_names_the_ids_that_start_with_it() {
        let id = ChunkId(0x3f9c0a12_00000000_00000000_0000abcd);
        let short: ChunkIdPrefix = "3f9c0a12".parse().unwrap();
        assert!(short.range().contains(&id.0));
        assert_eq!(short.to_string(), "3f9c0a12");
        assert_eq!(short.whole(), None);
        assert_eq!(*short.range().start(), 0x3f9c0a12 << 96);
        assert_eq!(*short.range().end(), (0x3f9c0a12 << 96) | (u128::MAX >> 32));
        assert!(!short.range().contains(&(id.0 + (1 << 96))));
        let whole: ChunkIdPrefix = id.to_string().parse().unwrap();
        assert_eq!(whole.range(), id.0..=id.0);
        assert_eq!(whole.whole(), Some(id));
        assert_eq!(whole.to_string(), id.to_string());
        for bad in ["3f9c0a1", "3f9c0a1g", "", "+3f9c0a12", &"0".repeat(33)] {
            assert!(bad.parse::<ChunkIdPrefix>().is_err(), "{bad}");
        }
    }
}
