//! Building the file graph and looking things up in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::imports::FileImports;
use crate::lang;
use crate::rank::{PageRankConfig, PageRanking, pagerank, personalized_pagerank};
use crate::repo::Repo;
use crate::{FileKey, GraphError, graph_key};

/// The version of import resolution, stored with each [`FileScore`](crate::FileScore): raised
/// when a change resolves the same imports to other files, so that an index ranks its graph
/// again instead of keeping the scores of the old edges. 1: C includes are also searched
/// from the directories they are written from.
pub const RESOLUTION_VERSION: u32 = 1;

/// Collects a repository's files, then resolves their imports into a [`FileGraph`].
///
/// Every file added is a node, whatever its language: the files given are all that
/// imports can resolve to. Add `Cargo.toml` and `go.mod` files too: they name the
/// crates and modules that Rust and Go imports refer to.
#[derive(Debug, Clone)]
pub struct GraphBuilder {
    root: PathBuf,
    files: BTreeMap<FileKey, FileImports>,
    include_dirs: Vec<String>,
}

impl GraphBuilder {
    /// A builder for the repository at `root`, which keys every path given to it.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        GraphBuilder {
            root: root.into(),
            files: BTreeMap::new(),
            include_dirs: Vec::new(),
        }
    }

    /// The key of `path` in this repository ([`graph_key`]).
    ///
    /// # Errors
    ///
    /// As [`graph_key`].
    pub fn key(&self, path: impl AsRef<Path>) -> Result<FileKey, GraphError> {
        graph_key(&self.root, path)
    }

    /// Searches `dir` for C and C++ includes, before the directories named `include` and
    /// those the includes are written from, which are always searched.
    ///
    /// # Errors
    ///
    /// As [`graph_key`], for `dir`.
    pub fn include_dir(&mut self, dir: impl AsRef<Path>) -> Result<&mut Self, GraphError> {
        let dir = String::from(self.key(dir)?);
        if !self.include_dirs.contains(&dir) {
            self.include_dirs.push(dir);
        }
        Ok(self)
    }

    /// Adds the file at `path` (absolute or root-relative, see [`graph_key`]) with
    /// its contents, reading its imports at once ([`FileImports::extract`]). Adding
    /// a path again replaces the file. Returns its key.
    ///
    /// # Errors
    ///
    /// As [`graph_key`].
    pub fn add_file(
        &mut self,
        path: impl AsRef<Path>,
        bytes: &[u8],
    ) -> Result<FileKey, GraphError> {
        let key = self.key(path)?;
        let imports = FileImports::extract(&key, bytes);
        self.files.insert(key.clone(), imports);
        Ok(key)
    }

    /// Adds a file whose imports were read elsewhere (on another thread, say).
    /// Adding a key again replaces the file.
    pub fn add(&mut self, key: FileKey, imports: FileImports) {
        self.files.insert(key, imports);
    }

    /// How many files have been added.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file has been added.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Resolves every import against the files added: each file that an import
    /// refers to becomes an edge from the importing file (once per pair, never to
    /// itself); an import that refers to none is counted as external.
    pub fn build(self) -> FileGraph {
        let (keys, files): (Vec<FileKey>, Vec<FileImports>) = self.files.into_iter().unzip();
        let mut repo = Repo::new(
            &keys,
            &files,
            &self.include_dirs,
            lang::python::import_roots(&keys),
        );
        let roots = lang::paths::include_roots(&repo, &files);
        repo.include_dirs.extend(roots);
        let mut edges = Vec::new();
        let mut externals = vec![0; keys.len()];
        let mut import_count = 0;
        for (from, file) in files.iter().enumerate() {
            let mut targets = Vec::new();
            for import in &file.imports {
                let resolved = lang::resolve(&repo, from as u32, import);
                if resolved.is_empty() {
                    externals[from] += 1;
                }
                targets.extend(resolved);
            }
            import_count += file.imports.len();
            targets.sort_unstable();
            targets.dedup();
            edges.extend(
                targets
                    .into_iter()
                    .filter(|&to| to as usize != from)
                    .map(|to| (from, to as usize)),
            );
        }
        let mut graph = DiGraph::with_capacity(keys.len(), edges.len());
        for key in keys {
            graph.add_node(key);
        }
        for (from, to) in edges {
            graph.add_edge(NodeIndex::new(from), NodeIndex::new(to), ());
        }
        FileGraph {
            root: self.root,
            graph,
            externals,
            import_count,
        }
    }
}

/// A repository's files and which import which: nodes are [`FileKey`]s in sorted
/// order, an edge runs from the importing file to the imported one.
#[derive(Debug, Clone)]
pub struct FileGraph {
    root: PathBuf,
    graph: DiGraph<FileKey, ()>,
    /// Per node, its imports that resolved to no file.
    externals: Vec<usize>,
    import_count: usize,
}

impl FileGraph {
    /// The key of `path` in this repository ([`graph_key`]): the way to turn a path
    /// from anywhere into something this graph and its [`PageRanking`]s look up.
    ///
    /// # Errors
    ///
    /// As [`graph_key`].
    pub fn key(&self, path: impl AsRef<Path>) -> Result<FileKey, GraphError> {
        graph_key(&self.root, path)
    }

    /// The repository root the graph keys paths against.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The petgraph graph: node weights are the keys, node indices follow their
    /// sorted order.
    pub fn graph(&self) -> &DiGraph<FileKey, ()> {
        &self.graph
    }

    /// The node of `key`.
    pub fn node(&self, key: &FileKey) -> Option<NodeIndex> {
        self.graph
            .raw_nodes()
            .binary_search_by(|node| node.weight.cmp(key))
            .ok()
            .map(NodeIndex::new)
    }

    /// Whether `key` is a file of the graph.
    pub fn contains(&self, key: &FileKey) -> bool {
        self.node(key).is_some()
    }

    /// How many files the graph has.
    pub fn file_count(&self) -> usize {
        self.graph.node_count()
    }

    /// How many (importing file, imported file) pairs there are.
    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// How many imports were read, resolved or not.
    pub fn import_count(&self) -> usize {
        self.import_count
    }

    /// How many imports resolved to no file of the repository.
    pub fn external_count(&self) -> usize {
        self.externals.iter().sum()
    }

    /// How many imports of `key` resolved to no file.
    pub fn externals_of(&self, key: &FileKey) -> Option<usize> {
        self.node(key).map(|node| self.externals[node.index()])
    }

    /// Every file, sorted.
    pub fn files(&self) -> impl ExactSizeIterator<Item = &FileKey> {
        self.graph.raw_nodes().iter().map(|node| &node.weight)
    }

    /// Every (importing, imported) pair, sorted.
    pub fn edges(&self) -> impl ExactSizeIterator<Item = (&FileKey, &FileKey)> {
        self.graph
            .raw_edges()
            .iter()
            .map(|edge| (&self.graph[edge.source()], &self.graph[edge.target()]))
    }

    /// The files `key` imports, sorted; `None` if it is not in the graph.
    pub fn imports_of(&self, key: &FileKey) -> Option<Vec<&FileKey>> {
        self.neighbours(key, Direction::Outgoing)
    }

    /// The files that import `key`, sorted; `None` if it is not in the graph.
    pub fn importers_of(&self, key: &FileKey) -> Option<Vec<&FileKey>> {
        self.neighbours(key, Direction::Incoming)
    }

    fn neighbours(&self, key: &FileKey, direction: Direction) -> Option<Vec<&FileKey>> {
        let node = self.node(key)?;
        let mut keys: Vec<&FileKey> = self
            .graph
            .neighbors_directed(node, direction)
            .map(|n| &self.graph[n])
            .collect();
        keys.sort_unstable();
        Some(keys)
    }

    /// Every file's PageRank and percentile.
    pub fn rank(&self, config: &PageRankConfig) -> PageRanking {
        PageRanking::new(self.files().cloned(), pagerank(&self.graph, config))
    }

    /// PageRank personalised to `focus`, over imports in both directions: the walk
    /// teleports to the focus files only (in equal parts) and follows an import
    /// either way, so a file scores by how closely it is tied to the focus through
    /// what they import and what imports them. For "related files" lookups; the
    /// focus files themselves score high, and callers usually skip them.
    ///
    /// The same as networkx's `pagerank(G.to_undirected(), personalization=…)`.
    ///
    /// # Errors
    ///
    /// [`GraphError::NoFocus`] for an empty `focus`, [`GraphError::UnknownFile`] for
    /// a focus file that is not in the graph.
    pub fn related(
        &self,
        focus: &[FileKey],
        config: &PageRankConfig,
    ) -> Result<PageRanking, GraphError> {
        if focus.is_empty() {
            return Err(GraphError::NoFocus);
        }
        let mut weights = vec![0.0; self.file_count()];
        for key in focus {
            let node = self
                .node(key)
                .ok_or_else(|| GraphError::UnknownFile(key.clone()))?;
            weights[node.index()] = 1.0;
        }
        let mut pairs: Vec<(u32, u32)> = self
            .graph
            .raw_edges()
            .iter()
            .flat_map(|e| {
                let (a, b) = (e.source().index() as u32, e.target().index() as u32);
                [(a, b), (b, a)]
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut undirected = DiGraph::<(), ()>::with_capacity(self.file_count(), pairs.len());
        for _ in 0..self.file_count() {
            undirected.add_node(());
        }
        undirected.extend_with_edges(pairs);
        let rank = personalized_pagerank(&undirected, &weights, config)?;
        Ok(PageRanking::new(self.files().cloned(), rank))
    }
}
