//! What a file defines: every named definition with its whole span and the chunk that shows it.

use quarry_chunk::{ChunkKind, Chunker, ChunkerConfig, Definition};

fn definitions(path: &str, source: &str) -> Vec<Definition> {
    definitions_with(Chunker::default(), path, source)
}

fn definitions_with(chunker: Chunker, path: &str, source: &str) -> Vec<Definition> {
    let file = chunker.chunk_file(path, source.as_bytes()).unwrap();
    for definition in &file.definitions {
        let chunk = file
            .chunks
            .iter()
            .find(|c| c.stored.id == definition.chunk)
            .expect("a definition's chunk is one of the file's");
        assert!(
            chunk.stored.start_line <= definition.end_line
                && chunk.stored.end_line >= definition.start_line,
            "{definition:?} is shown by {chunk}"
        );
    }
    file.definitions
}

fn summary(definitions: &[Definition]) -> Vec<(String, ChunkKind, usize, usize)> {
    definitions
        .iter()
        .map(|d| (d.qualified_name(), d.kind, d.start_line, d.end_line))
        .collect()
}

#[test]
fn c_names_typedefs_struct_tags_macros_and_functions_but_not_prototypes() {
    let source = "\
#include <stddef.h>
#define BUFFER_SIZE 4096
#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct session;
int session_open(struct session *s);

typedef struct session_state {
    int fd;
    size_t sent;
} session_state_t;

int session_open(struct session *s)
{
    return 0;
}
";
    assert_eq!(
        summary(&definitions("session.c", source)),
        [
            ("BUFFER_SIZE".into(), ChunkKind::Macro, 2, 2),
            ("MAX".into(), ChunkKind::Macro, 3, 3),
            ("session_state".into(), ChunkKind::Struct, 8, 11),
            ("session_state_t".into(), ChunkKind::Type, 8, 11),
            ("session_open".into(), ChunkKind::Function, 13, 16),
        ]
    );
}

#[test]
fn a_conditional_inside_a_declaration_leaves_its_class_and_methods_defined() {
    // From pythonnet's Finalizer.cs: an `#if` in a parameter list, before a block and in an
    // initializer, which tree-sitter-c-sharp cannot follow.
    let source = "\
namespace Python.Runtime
{
    public class Finalizer
    {
        internal void AddFinalizedObject(ref IntPtr obj, int run
#if TRACE_ALLOC
                                         , StackTrace stackTrace
#endif
        )
        {
            Debug.Assert(obj != IntPtr.Zero);
            if (!Enable)
            {
                return;
            }

            Debug.Assert(Runtime.Refcount(new BorrowedReference(obj)) > 0);

#if FINALIZER_CHECK
            lock (_queueLock)
#endif
            {
                this._objQueue.Enqueue(new PendingFinalization {
                    PyObj = obj, RuntimeRun = run,
#if TRACE_ALLOC
                    StackTrace = stackTrace.ToString(),
#endif
                });
            }
            obj = IntPtr.Zero;
        }

        internal void AddDerivedFinalizedObject(ref IntPtr derived, int run)
        {
            if (derived == IntPtr.Zero)
                throw new ArgumentNullException(nameof(derived));

            if (!Enable)
            {
                return;
            }

            var pending = new PendingFinalization { PyObj = derived, RuntimeRun = run };
            derived = IntPtr.Zero;
            _derivedQueue.Enqueue(pending);
        }

        internal void AddFinalizedBuffer(ref Py_buffer buffer)
        {
            if (buffer.obj == IntPtr.Zero)
                throw new ArgumentNullException(nameof(buffer));

            if (!Enable)
                return;

            var pending = buffer;
            buffer = default;
            _bufferQueue.Enqueue(pending);
        }

        internal static void Initialize()
        {
            Instance.started = true;
        }

        internal static void Shutdown()
        {
            Instance.DisposeAll();
            Instance.started = false;
        }

        internal nint DisposeAll(bool disposeObj = true)
        {
            return 0;
        }
    }
}
";
    // Without the conditionals blanked, the error swallows the namespace: no definitions.
    let names: Vec<(String, ChunkKind, usize)> = definitions("Finalizer.cs", source)
        .iter()
        .map(|d| (d.qualified_name(), d.kind, d.start_line))
        .collect();
    let member = |name: &str, line| {
        let name = format!("Python.Runtime::Finalizer::{name}");
        (name, ChunkKind::Method, line)
    };
    let expected = vec![
        ("Python.Runtime".to_owned(), ChunkKind::Module, 1),
        ("Python.Runtime::Finalizer".to_owned(), ChunkKind::Class, 3),
        member("AddFinalizedObject", 5),
        member("AddDerivedFinalizedObject", 33),
        member("AddFinalizedBuffer", 48),
        member("Initialize", 61),
        member("Shutdown", 66),
        member("DisposeAll", 72),
    ];
    assert_eq!(names, expected);
    // The chunks keep the file's text, conditionals and all.
    let chunks =
        Chunker::default().chunk_text("Finalizer.cs", source, quarry_chunk::Language::CSharp);
    assert!(
        chunks
            .iter()
            .any(|c| c.stored.text.contains("#if TRACE_ALLOC"))
    );
}

#[test]
fn a_class_the_parse_lost_keeps_its_name_and_its_chunk_beside_its_constructors() {
    // A macro before a member (protobuf's RepeatedPtrField, its `ABSL_DEPRECATED` renamed to
    // a name the annotation blanking leaves: no underscore) leaves the class to an error;
    // the lines still show a class, and the constructor defined outside it does not take
    // the class's place.
    let source = "\
template <typename Element>
class RepeatedPtrField final : private internal::RepeatedPtrFieldBase {
 public:
  constexpr RepeatedPtrField();
  int size() const;

  DEPRECATED(\"This will be removed in a future release\")
  int ClearedCount() const;
};

template <typename Element>
inline RepeatedPtrField<Element>::RepeatedPtrField() : RepeatedPtrFieldBase() {}
";
    let found: Vec<(String, ChunkKind)> = definitions("repeated_ptr_field.h", source)
        .iter()
        .map(|d| (d.qualified_name(), d.kind))
        .collect();
    assert!(
        found.contains(&("RepeatedPtrField".to_owned(), ChunkKind::Class)),
        "{found:?}"
    );
    // The block the error left is that class, by its name.
    let chunks =
        Chunker::default().chunk_text("repeated_ptr_field.h", source, quarry_chunk::Language::Cpp);
    let shown: Vec<(usize, ChunkKind, Option<&str>)> = chunks
        .iter()
        .map(|c| (c.stored.start_line, c.stored.kind, c.stored.name.as_deref()))
        .collect();
    assert_eq!(
        shown,
        [
            (1, ChunkKind::Class, Some("RepeatedPtrField")),
            (11, ChunkKind::Function, Some("RepeatedPtrField"))
        ]
    );
}

#[test]
fn annotation_macros_do_not_cost_a_class_its_members() {
    // spdlog's and protobuf's export, inline and deprecation macros: without their
    // definitions the grammar loses the class to one error, and its members with it.
    let source = "\
namespace google {
class PROTOBUF_EXPORT Arena final {
 public:
  ABSL_DEPRECATED(\"Use Create\")
  void* AllocateAligned(size_t n) { return Allocate(n); }
  PROTOBUF_NODISCARD void* Create(size_t n) { return Allocate(n); }
};
}  // namespace google

SPDLOG_INLINE void logger::flush() {
  flush_();
}
";
    let found: Vec<String> = definitions("arena.h", source)
        .iter()
        .map(|d| d.qualified_name())
        .collect();
    for name in [
        "google::Arena",
        "google::Arena::AllocateAligned",
        "google::Arena::Create",
        "logger::flush",
    ] {
        assert!(found.contains(&name.to_owned()), "{name} in {found:?}");
    }
}

#[test]
fn members_of_a_container_that_stays_one_chunk_are_definitions_too() {
    let source = "\
class Cache:
    \"\"\"Keeps answers.\"\"\"

    def get(self, key):
        return self.items.get(key)

    def put(self, key, value):
        self.items[key] = value
";
    assert_eq!(
        summary(&definitions("cache.py", source)),
        [
            ("Cache".into(), ChunkKind::Class, 1, 8),
            ("Cache::get".into(), ChunkKind::Method, 4, 5),
            ("Cache::put".into(), ChunkKind::Method, 7, 8),
        ]
    );
}

#[test]
fn a_split_container_spans_its_header_and_members_and_is_shown_by_its_header() {
    let body: String = (0..12)
        .map(|i| format!("    def method_{i}(self):\n        return {i} + self.offset * {i}\n\n"))
        .collect();
    let source = format!("class Wide:\n    offset = 1\n\n{body}");
    let file = Chunker::new(ChunkerConfig {
        budget: 200,
        ..ChunkerConfig::default()
    })
    .chunk_file("wide.py", source.as_bytes())
    .unwrap();
    let wide = &file.definitions[0];
    assert_eq!((wide.name.as_str(), wide.kind), ("Wide", ChunkKind::Class));
    assert_eq!((wide.start_line, wide.end_line), (1, 2 + 12 * 3));
    let header = file
        .chunks
        .iter()
        .find(|c| c.stored.id == wide.chunk)
        .unwrap();
    assert_eq!(header.stored.kind, ChunkKind::Header);
    assert_eq!(file.definitions.len(), 13);
    assert_eq!(file.definitions[12].qualified_name(), "Wide::method_11");
}

#[test]
fn go_methods_are_qualified_by_their_receiver_and_cpp_by_their_class() {
    let go = "\
package index

type Index struct {
\tdocs []string
}

func (ix *Index) Search(q string) []string {
\treturn nil
}
";
    assert_eq!(
        summary(&definitions("index.go", go)),
        [
            ("Index".into(), ChunkKind::Struct, 3, 5),
            ("Index::Search".into(), ChunkKind::Method, 7, 9),
        ]
    );
    let cpp = "\
namespace net {
class Socket;
int Socket::send(const char *data) {
    return 0;
}
}
";
    let names: Vec<String> = definitions("socket.cpp", cpp)
        .iter()
        .map(Definition::qualified_name)
        .collect();
    assert_eq!(names, ["net", "net::Socket::send"]);
}

#[test]
fn javascript_exports_and_prototype_assignments_are_definitions() {
    let source = "\
exports.compileTrust = function (val) {
  return val;
};

Router.prototype.use = function use(fn) {
  return this;
};

module.exports = function createApplication() {
  return {};
};
";
    assert_eq!(
        summary(&definitions("lib/utils.js", source)),
        [
            ("compileTrust".into(), ChunkKind::Function, 1, 3),
            ("Router::use".into(), ChunkKind::Function, 5, 7),
            ("createApplication".into(), ChunkKind::Function, 9, 11),
        ]
    );
}

#[test]
fn an_elixir_module_is_named_by_its_last_segment_in_the_modules_before_it() {
    let source = "\
defmodule Shop.Cart do
  def total(cart), do: Enum.sum(cart.prices)
end

defprotocol Shop.Priced do
  def price(item)
end
";
    let found = definitions("lib/shop/cart.ex", source);
    assert_eq!(
        summary(&found),
        [
            ("Shop::Cart".into(), ChunkKind::Module, 1, 3),
            ("Shop::Cart::total".into(), ChunkKind::Function, 2, 2),
            ("Shop::Priced".into(), ChunkKind::Trait, 5, 7),
            ("Shop::Priced::price".into(), ChunkKind::Method, 6, 6),
        ]
    );
    assert_eq!(found[0].name, "Cart");
    assert_eq!(found[0].container, ["Shop"]);
}

#[test]
fn items_inside_an_item_level_macro_body_are_chunks_and_definitions() {
    // tokio wraps items in `cfg_*! { ... }`; tree-sitter-rust sees only tokens there.
    let source = "\
use crate::runtime;

cfg_rt! {
    /// Spawns a task.
    pub fn spawn<F>(future: F) -> JoinHandle<F::Output> {
        runtime::spawn(future)
    }

    pub struct JoinHandle<T> {
        raw: RawTask<T>,
    }
}

impl<T> JoinHandle<T> {
    cfg_metrics! {
        pub fn id(&self) -> Id {
            self.raw.id()
        }
    }
}
";
    assert_eq!(
        summary(&definitions("src/task.rs", source)),
        [
            ("spawn".into(), ChunkKind::Function, 4, 7),
            // The macro's closing brace goes with the item before it, as any stray line does.
            ("JoinHandle".into(), ChunkKind::Struct, 9, 12),
            ("JoinHandle".into(), ChunkKind::Impl, 14, 20),
            ("JoinHandle::id".into(), ChunkKind::Method, 16, 18),
        ]
    );
    let chunks = Chunker::default()
        .chunk("src/task.rs", source.as_bytes())
        .unwrap();
    let spawn = chunks
        .iter()
        .map(|c| &c.stored)
        .find(|c| c.name.as_deref() == Some("spawn"))
        .expect("spawn is a chunk of its own");
    assert_eq!(
        (spawn.kind, spawn.start_line, spawn.end_line),
        (ChunkKind::Function, 4, 7)
    );
}

#[test]
fn items_in_every_branch_of_a_cfg_if_body_are_chunks_and_definitions() {
    // `cfg_if!`'s body is not items, but each of its brace groups holds some.
    let source = "\
cfg_if::cfg_if! {
    if #[cfg(unix)] {
        /// The page size.
        pub fn page_size() -> usize {
            unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
        }
    } else if #[cfg(windows)] {
        pub fn page_size() -> usize {
            4096
        }
    } else {
        pub struct Unsupported;
    }
}
";
    // The lines between the groups go with the item beside them, as the macro's head and
    // closing brace do in `cfg_rt!`.
    assert_eq!(
        summary(&definitions("src/os.rs", source)),
        [
            ("page_size".into(), ChunkKind::Function, 1, 7),
            ("page_size".into(), ChunkKind::Function, 8, 11),
            ("Unsupported".into(), ChunkKind::Struct, 12, 14),
        ]
    );
    let chunks = Chunker::default()
        .chunk("src/os.rs", source.as_bytes())
        .unwrap();
    quarry_chunk::check_chunks(source, &chunks, ChunkerConfig::default().budget).unwrap();
    let named: Vec<(Option<&str>, usize, usize)> = chunks
        .iter()
        .map(|c| {
            (
                c.stored.name.as_deref(),
                c.stored.start_line,
                c.stored.end_line,
            )
        })
        .filter(|(name, ..)| name.is_some())
        .collect();
    assert_eq!(
        named,
        [
            (Some("page_size"), 1, 7),
            (Some("page_size"), 8, 11),
            (Some("Unsupported"), 12, 14)
        ]
    );
}

#[test]
fn a_lua_table_with_functions_is_a_module_at_its_statement() {
    let source = "\
local utils = require 'utils'
local List = utils.stdmt.List
local count = 0

function List.new(items)
    return setmetatable(items or {}, List)
end

function List:append(value)
    self[#self + 1] = value
end

Map = {}

function Map:get(key)
    return self[key]
end

return List
";
    assert_eq!(
        summary(&definitions("List.lua", source)),
        [
            ("List".into(), ChunkKind::Module, 2, 2),
            ("List::new".into(), ChunkKind::Function, 5, 7),
            ("List::append".into(), ChunkKind::Function, 9, 11),
            ("Map".into(), ChunkKind::Module, 13, 13),
            ("Map::get".into(), ChunkKind::Function, 15, 17),
        ]
    );
}
