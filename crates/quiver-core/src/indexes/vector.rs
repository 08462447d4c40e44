//! The `vector` index of a collection (ArangoDB 3.12, Faiss `IVF<nLists>,Flat`): documents'
//! embeddings filed in the inverted file of `vector::ivf`, maintained by the protocol of
//! `maintained.rs` like every other in-memory index.
//!
//! The quantizer (the `nLists` centroids) is learnt once, when the index is created, from the
//! vectors the collection holds then, and kept in a file of its own
//! (`vector-indexes/<collection id>/<index id>.ivf` in the data directory) so that every
//! restart files vectors under the same centroids. A start-up that finds the file missing or
//! damaged says so in the log and trains again from the data. Documents without a valid vector
//! (missing, not numeric, another dimension) are not in the index.

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::indexes::definition::IndexDef;
use crate::indexes::structure::{Completion, IndexStructure};
use crate::vector::ivf::{Hit, Ivf, Quantizer};
use crate::vector::{self, kmeans, quantizer_file, Metric, NotAVector};

/// Seed of the training sample and the initial centroids: the same data trains the same
/// quantizer.
const TRAINING_SEED: u64 = 0x5eed_0f1a_b5e5;

/// Threads that train a quantizer (ArangoDB's default `parallelism`).
const TRAINING_THREADS: usize = 2;

/// The search parameters of a vector index definition (`params`).
#[derive(Clone, Debug, PartialEq)]
pub struct VectorParams {
    pub metric: Metric,
    pub dimension: usize,
    pub n_lists: usize,
    pub default_n_probe: usize,
    pub training_iterations: usize,
    /// Threads for training (`parallelism`).
    pub parallelism: usize,
}

impl VectorParams {
    /// The parameters of a stored vector index definition (validated when it was created).
    pub(crate) fn of(def: &IndexDef) -> Option<VectorParams> {
        VectorParams::from_params(def.extra.get("params")?)
    }

    /// The parameters in an index description (`GET /_api/index`), None for other types.
    pub fn from_description(description: &Value) -> Option<VectorParams> {
        if description.get("type").and_then(Value::as_str) != Some("vector") {
            return None;
        }
        VectorParams::from_params(description.get("params")?)
    }

    fn from_params(params: &Value) -> Option<VectorParams> {
        let number = |key: &str| params.get(key).and_then(Value::as_u64).map(|n| n as usize);
        Some(VectorParams {
            metric: Metric::parse(params.get("metric")?.as_str()?)?,
            dimension: number("dimension")?,
            n_lists: number("nLists")?,
            default_n_probe: number("defaultNProbe").unwrap_or(1),
            training_iterations: number("trainingIterations").unwrap_or(25),
            parallelism: TRAINING_THREADS,
        })
    }
}

/// What a structure is built for: an index that exists already (start-up: a quantizer file
/// there is this index's own, stored documents were checked when written) or one being
/// created (a file there belongs to an earlier index of the same id; stored documents may
/// not fit it, which fails the creation); and where a vector index keeps its quantizer.
#[derive(Clone, Debug)]
pub(crate) struct BuildContext {
    pub path: Option<PathBuf>,
    pub existing: bool,
}

/// Why `doc` cannot be written to a collection with vector index `def` (ArangoDB's
/// checks): a non-sparse index needs the attribute (10), and a value that is there must be an
/// array of `dimension` numbers (17). A sparse index leaves out documents where the attribute
/// is missing or null.
pub(crate) fn check_document(def: &IndexDef, key: &str, doc: &Map<String, Value>) -> Result<()> {
    let (Some(field), Some(params)) = (def.fields.first(), VectorParams::of(def)) else {
        return Ok(());
    };
    match vector::vector_of(vector::attribute(doc, field), params.dimension) {
        Ok(_) => Ok(()),
        Err(NotAVector::Missing) if def.sparse => Ok(()),
        Err(NotAVector::Missing) if vector::attribute(doc, field).is_none() => {
            Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("vector field not present in document {key}"),
            ))
        }
        Err(NotAVector::Missing) => Err(Error::with_message(
            ErrorCode::TypeError,
            format!("array expected for vector attribute for document {key}"),
        )),
        Err(NotAVector::NotNumeric) => Err(Error::with_message(
            ErrorCode::TypeError,
            match vector::attribute(doc, field) {
                Some(Value::Array(_)) => {
                    format!("vector contains data not representable as double for document {key}")
                }
                _ => format!("array expected for vector attribute for document {key}"),
            },
        )),
        Err(NotAVector::WrongDimension(found)) => Err(Error::with_message(
            ErrorCode::TypeError,
            format!(
                "provided vector is not of matching dimension for document {key}, index \
                 dimension: {}, document dimension: {found}",
                params.dimension
            ),
        )),
    }
}

/// One vector index's structure.
pub(crate) struct VectorIndex {
    def: IndexDef,
    field: String,
    params: VectorParams,
    ivf: Ivf,
    place: BuildContext,
    /// While the index is created: the first document of the build scan it cannot hold
    /// (reported as the creation's error, as ArangoDB refuses such an index).
    refused: Option<Error>,
}

impl VectorIndex {
    pub fn new(def: &IndexDef, place: BuildContext) -> Option<VectorIndex> {
        let params = VectorParams::of(def)?;
        Some(VectorIndex {
            def: def.clone(),
            field: def.fields.first()?.clone(),
            ivf: Ivf::new(params.metric, params.dimension, None),
            params,
            place,
            refused: None,
        })
    }

    /// The document's vector, prepared for the metric; None when it has no valid one.
    fn vector(&self, doc: &Map<String, Value>) -> Option<Vec<f32>> {
        let mut v =
            vector::vector_of(vector::attribute(doc, &self.field), self.params.dimension).ok()?;
        self.params.metric.prepare(&mut v);
        Some(v)
    }

    /// The best `want` entries of the `n_probe` lists nearest to the prepared `query`, best
    /// first.
    pub fn search(&self, query: &[f32], n_probe: usize, want: usize) -> Vec<Hit> {
        self.ivf.search(query, n_probe, want)
    }
}

/// Loads the quantizer that fits `params` from `place`, or trains one over `sample` (and
/// keeps it there). With fewer vectors than lists: error 10 when the index is being created;
/// at start-up (a lost quantizer) None, and the index answers by reading every entry.
fn load_or_train(
    params: &VectorParams,
    place: &BuildContext,
    sample: &[f32],
    name: &str,
) -> Result<Option<Quantizer>> {
    if let (Some(path), true) = (&place.path, place.existing) {
        match quantizer_file::read(path) {
            Ok(Some(q))
                if q.metric == params.metric
                    && q.dim == params.dimension
                    && q.lists() == params.n_lists =>
            {
                return Ok(Some(q));
            }
            Ok(Some(_)) => tracing::warn!(
                "vector index {name}: the quantizer in {} does not match the index's \
                 parameters; training it again",
                path.display()
            ),
            Ok(None) => tracing::warn!(
                "vector index {name}: its quantizer {} is missing; training it again",
                path.display()
            ),
            Err(why) => tracing::warn!(
                "vector index {name}: its quantizer {} is damaged ({why}); training it again",
                path.display()
            ),
        }
    }
    let dim = params.dimension;
    let n = sample.len() / dim;
    if n == 0 && !place.existing {
        return Err(Error::with_message(
            ErrorCode::NotImplemented,
            "For the vector index to be created documents must be present in the respective \
             collection for the training process.",
        ));
    }
    if n < params.n_lists && place.existing {
        tracing::warn!(
            "vector index {name}: {n} vectors are too few to train {} lists; \
             searches read every entry until the index is created again",
            params.n_lists
        );
        return Ok(None);
    }
    if n < params.n_lists {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!(
                "the vector index needs at least nLists = {} documents with a vector of \
                 dimension {dim} to train on, the collection has {n}",
                params.n_lists
            ),
        ));
    }
    let centroids = kmeans::train(
        sample,
        dim,
        &kmeans::Training {
            k: params.n_lists,
            iterations: params.training_iterations,
            spherical: params.metric != Metric::L2,
            threads: params.parallelism.clamp(1, 64),
            seed: TRAINING_SEED,
        },
    );
    let q = Quantizer {
        metric: params.metric,
        dim,
        centroids,
    };
    if let Some(path) = &place.path {
        quantizer_file::write(path, &q).map_err(|err| {
            Error::with_message(
                ErrorCode::IoError,
                format!("cannot write {}: {err}", path.display()),
            )
        })?;
    }
    Ok(Some(q))
}

impl IndexStructure for VectorIndex {
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        match self.vector(doc) {
            Some(v) => self.ivf.insert(key, rev, &v),
            // Writes are checked before they reach the index; only the creation scan meets
            // documents stored before the index existed.
            None if !self.place.existing && self.refused.is_none() => {
                self.refused = check_document(&self.def, key, doc).err();
            }
            None => {}
        }
    }

    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        if let Some(v) = self.vector(doc) {
            self.ivf.remove(key, rev, &v);
        }
    }

    fn len(&self) -> usize {
        self.ivf.len()
    }

    fn selectivity(&self) -> Option<f64> {
        None
    }

    fn fresh(&self) -> Box<dyn IndexStructure> {
        Box::new(VectorIndex {
            def: self.def.clone(),
            field: self.field.clone(),
            params: self.params.clone(),
            ivf: self.ivf.fresh(),
            place: self.place.clone(),
            refused: None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn completion(&self, name: &str) -> Option<Completion> {
        if let Some(err) = &self.refused {
            let err = err.clone();
            return Some(Box::new(move || Err(err)));
        }
        if self.ivf.quantizer().is_some() {
            return None;
        }
        // The training sample is taken here, under the index's read lock; the training runs
        // without it, while writers go on filing into the unassigned list.
        let dim = self.params.dimension;
        let cap = self
            .params
            .n_lists
            .saturating_mul(kmeans::MAX_POINTS_PER_CENTROID);
        let sample = kmeans::sample_rows(self.ivf.unassigned_vectors(), dim, cap, TRAINING_SEED);
        let params = self.params.clone();
        let place = self.place.clone();
        let name = name.to_string();
        Some(Box::new(move || {
            let q = load_or_train(&params, &place, &sample, &name)?.map(Arc::new);
            Ok(Box::new(q) as Box<dyn Any + Send>)
        }))
    }

    fn complete(&mut self, done: Box<dyn Any + Send>) {
        let q = done
            .downcast::<Option<Arc<Quantizer>>>()
            .expect("a vector index completes with its quantizer");
        if let (Some(q), None) = (*q, self.ivf.quantizer()) {
            self.ivf.install(q);
        }
    }
}
