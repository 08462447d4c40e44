//! ArangoDB-compatible error numbers, default messages and HTTP statuses, in one table.
//!
//! Every crate reports failures as [`Error`]: an [`ErrorCode`] (ArangoDB's `errorNum`) plus a
//! message. The HTTP layer turns it into `{"error":true,"errorNum":N,"errorMessage":"…","code":S}`
//! with the status from [`ErrorCode::http_status`], so the mapping lives in exactly one place.

use std::fmt;

macro_rules! error_codes {
    ($( $name:ident = $num:literal, $status:literal, $msg:literal; )*) => {
        /// An ArangoDB error number. Names follow ArangoDB's `errors.dat` without the
        /// `ERROR_` prefix, in CamelCase.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                #[doc = $msg]
                $name,
            )*
        }

        impl ErrorCode {
            /// Every code in the table, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            /// ArangoDB's `errorNum`.
            pub const fn number(self) -> u32 {
                match self { $(ErrorCode::$name => $num,)* }
            }

            /// The HTTP status ArangoDB answers with when a handler fails with this code.
            pub const fn http_status(self) -> u16 {
                match self { $(ErrorCode::$name => $status,)* }
            }

            /// ArangoDB's default message (from `errors.dat`).
            pub const fn default_message(self) -> &'static str {
                match self { $(ErrorCode::$name => $msg,)* }
            }

            /// Looks a code up by its number.
            pub fn from_number(number: u32) -> Option<ErrorCode> {
                match number { $($num => Some(ErrorCode::$name),)* _ => None }
            }
        }
    };
}

error_codes! {
    Internal = 4, 500, "internal error";
    IllegalNumber = 8, 400, "illegal number";
    NotImplemented = 9, 501, "not implemented";
    BadParameter = 10, 400, "bad parameter";
    Forbidden = 11, 403, "forbidden";
    OutOfMemory = 12, 500, "out of memory";
    CorruptedDatafile = 1000, 500, "corrupted datafile";
    IllegalParameterFile = 1001, 500, "illegal or unreadable parameter file";
    CorruptedCollection = 1002, 500, "corrupted collection";
    FileSystemFull = 1104, 500, "filesystem full";
    WriteThrottleTimeout = 1236, 500, "write-throttling timeout";
    TypeError = 17, 400, "type error";
    LockTimeout = 18, 500, "lock timeout";
    CannotCreateDirectory = 19, 500, "cannot create directory";
    CannotCreateTempFile = 20, 500, "cannot create temporary file";
    RequestCanceled = 21, 410, "canceled request";
    Debug = 22, 500, "intentional debug error";
    IoError = 25, 500, "IO error";
    FileExists = 27, 500, "file exists";
    Shutdown = 30, 503, "shutdown in progress";
    OnlyEnterprise = 31, 501, "this feature is only available in the Enterprise Edition of ArangoDB";
    ResourceLimit = 32, 500, "resource limit exceeded";
    HttpBadParameter = 400, 400, "bad parameter";
    HttpUnauthorized = 401, 401, "unauthorized";
    HttpForbidden = 403, 403, "forbidden";
    HttpNotFound = 404, 404, "not found";
    HttpMethodNotAllowed = 405, 405, "method not supported";
    HttpNotAcceptable = 406, 406, "request not acceptable";
    HttpRequestTimeout = 408, 408, "request timeout";
    HttpConflict = 409, 409, "conflict";
    HttpPreconditionFailed = 412, 412, "precondition failed";
    HttpRequestTooLarge = 413, 413, "request entity too large";
    HttpUriTooLong = 414, 414, "request-URI too long";
    HttpRequestHeaderFieldsTooLarge = 431, 431, "request header fields too large";
    HttpServerError = 500, 500, "internal server error";
    HttpNotImplemented = 501, 501, "not implemented";
    HttpServiceUnavailable = 503, 503, "service unavailable";
    HttpCorruptedJson = 600, 400, "invalid JSON object";
    HttpSuperfluousSuffices = 601, 400, "superfluous URL suffices";
    ReadOnly = 1004, 403, "read only";
    DuplicateIdentifier = 1005, 500, "duplicate identifier";
    DatafileFull = 1009, 500, "datafile full";
    DataDirectoryLocked = 1019, 500, "database directory is locked";
    ArangoConflict = 1200, 409, "conflict";
    DocumentNotFound = 1202, 404, "document not found";
    DataSourceNotFound = 1203, 404, "collection or view not found";
    CollectionParameterMissing = 1204, 400, "parameter 'collection' not found";
    DocumentHandleBad = 1205, 400, "illegal document identifier";
    DuplicateName = 1207, 409, "duplicate name";
    IllegalName = 1208, 400, "illegal name";
    NoIndex = 1209, 500, "no suitable index known";
    UniqueConstraintViolated = 1210, 409, "unique constraint violated";
    IndexNotFound = 1212, 404, "index not found";
    CrossCollectionRequest = 1213, 400, "cross collection request not allowed";
    IndexHandleBad = 1214, 400, "illegal index identifier";
    DocumentTooLarge = 1216, 400, "document too large";
    CollectionTypeInvalid = 1218, 400, "collection type invalid";
    AttributeParserFailed = 1220, 400, "parsing attribute name definition failed";
    DocumentKeyBad = 1221, 400, "illegal document key";
    DocumentKeyUnexpected = 1222, 400, "unexpected document key";
    DatadirNotWritable = 1224, 500, "server database directory not writable";
    OutOfKeys = 1225, 500, "out of keys";
    DocumentKeyMissing = 1226, 400, "missing document key";
    DocumentTypeInvalid = 1227, 400, "invalid document type";
    DatabaseNotFound = 1228, 404, "database not found";
    DatabaseNameInvalid = 1229, 400, "database name invalid";
    UseSystemDatabase = 1230, 403, "operation only allowed in system database";
    InvalidKeyGenerator = 1232, 400, "invalid key generator";
    InvalidEdgeAttribute = 1233, 400, "edge attribute missing or invalid";
    IndexCreationFailed = 1235, 400, "index creation failed";
    CollectionTypeMismatch = 1237, 400, "collection type mismatch";
    CollectionNotLoaded = 1238, 404, "collection not loaded";
    DocumentRevBad = 1239, 400, "illegal document revision";
    IncompleteRead = 1240, 500, "incomplete read";
    ClusterOnlyOnCoordinator = 1471, 403, "this operation is only valid on a coordinator in a cluster";
    QueryKilled = 1500, 410, "query killed";
    QueryParse = 1501, 400, "syntax error";
    QueryEmpty = 1502, 400, "query is empty";
    QueryScript = 1503, 500, "runtime error";
    QueryNumberOutOfRange = 1504, 400, "number out of range";
    QueryInvalidGeoValue = 1505, 400, "invalid geo coordinate value";
    QueryVariableNameInvalid = 1510, 400, "variable name is invalid";
    QueryVariableRedeclared = 1511, 400, "variable is already declared";
    QueryVariableNameUnknown = 1512, 400, "unknown variable";
    QueryCollectionLockFailed = 1521, 500, "unable to read-lock collection";
    QueryTooManyCollections = 1522, 400, "too many collections/shards";
    QueryTooMuchNesting = 1524, 400, "too much nesting or too many objects";
    QueryInvalidOptionsAttribute = 1539, 400, "unknown OPTIONS attribute used";
    QueryFunctionNameUnknown = 1540, 400, "usage of unknown function";
    QueryFunctionArgumentNumberMismatch = 1541, 400, "invalid number of arguments for function";
    QueryFunctionArgumentTypeMismatch = 1542, 400, "invalid argument type in call to function";
    QueryInvalidRegex = 1543, 400, "invalid regex value";
    QueryBindParametersInvalid = 1550, 400, "invalid structure of bind parameters";
    QueryBindParameterMissing = 1551, 400, "no value specified for declared bind parameter";
    QueryBindParameterUndeclared = 1552, 400, "bind parameter was not declared in the query";
    QueryBindParameterType = 1553, 400, "bind parameter has an invalid value or type";
    QueryVectorSearchNotApplied = 1554, 500, "failed vector search";
    QueryInvalidArithmeticValue = 1561, 400, "invalid arithmetic value";
    QueryDivisionByZero = 1562, 400, "division by zero";
    QueryArrayExpected = 1563, 400, "array expected";
    QueryCollectionUsedInExpression = 1568, 400, "collection used in expression";
    QueryFailCalled = 1569, 400, "FAIL(%s) called";
    QueryGeoIndexMissing = 1570, 404, "no suitable geo index found for geo restriction";
    QueryFulltextIndexMissing = 1571, 404, "no suitable fulltext index found for fulltext query";
    QueryInvalidDateValue = 1572, 400, "invalid date value";
    QueryMultiModify = 1573, 400, "multi-modify query";
    QueryInvalidAggregateExpression = 1574, 400, "invalid aggregate expression";
    QueryCompileTimeOptions = 1575, 400, "query options must be readable at query compile time";
    QueryForcedIndexHintUnusable = 1577, 400, "forced index hint could not be used";
    QueryDisallowedDynamicCall = 1578, 400, "disallowed dynamic call";
    QueryAccessAfterModification = 1579, 400, "access after data-modification by %s";
    QueryFunctionInvalidName = 1580, 400, "invalid user function name";
    QueryFunctionInvalidCode = 1581, 400, "invalid user function code";
    QueryFunctionNotFound = 1582, 404, "user function '%s()' not found";
    QueryFunctionRuntimeError = 1583, 500, "user function runtime error";
    QueryNotEligibleForPlanCaching = 1584, 400, "query is not eligible for plan caching";
    QueryBadJsonPlan = 1590, 400, "bad execution plan JSON";
    QueryNotFound = 1591, 404, "query ID not found";
    QueryUserAssert = 1593, 400, "%s";
    QueryUserWarn = 1594, 400, "%s";
    QueryWindowAfterModification = 1595, 400, "window operation after data-modification";
    CursorNotFound = 1600, 404, "cursor not found";
    CursorBusy = 1601, 409, "cursor is busy";
    ValidationFailed = 1620, 400, "schema validation failed";
    ValidationBadParameter = 1621, 400, "invalid schema validation parameter";
    TransactionInternal = 1650, 500, "internal transaction error";
    TransactionNested = 1651, 400, "nested transactions detected";
    TransactionUnregisteredCollection = 1652, 400, "unregistered collection used in transaction";
    TransactionDisallowedOperation = 1653, 400, "disallowed operation inside transaction";
    TransactionAborted = 1654, 410, "transaction aborted";
    TransactionNotFound = 1655, 404, "transaction not found";
    UserInvalidName = 1700, 400, "invalid user name";
    UserDuplicate = 1702, 409, "duplicate user";
    UserNotFound = 1703, 404, "user not found";
    TaskInvalidId = 1850, 400, "invalid task id";
    TaskDuplicateId = 1851, 409, "duplicate task id";
    TaskNotFound = 1852, 404, "task not found";
    GraphInvalidGraph = 1901, 400, "invalid graph";
    GraphCouldNotCreateGraph = 1902, 400, "could not create graph";
    GraphInvalidVertex = 1903, 400, "invalid vertex";
    GraphInvalidEdge = 1906, 400, "invalid edge";
    GraphCollectionMultiUse = 1920, 400, "multi use of edge collection in edge def";
    GraphCollectionUseInMultiGraphs = 1921, 400, "edge collection already used in edge def";
    GraphCreateMissingName = 1922, 400, "missing graph name";
    GraphCreateMalformedEdgeDefinition = 1923, 400, "malformed edge definition";
    GraphNotFound = 1924, 404, "graph '%s' not found";
    GraphDuplicate = 1925, 409, "graph already exists";
    GraphVertexColDoesNotExist = 1926, 404, "vertex collection does not exist or is not part of the graph";
    GraphWrongCollectionTypeVertex = 1927, 400, "collection not a vertex collection";
    GraphNotInOrphanCollection = 1928, 400, "collection is not in list of orphan collections";
    GraphCollectionUsedInEdgeDef = 1929, 400, "collection already used in edge def";
    GraphEdgeCollectionNotUsed = 1930, 404, "edge collection not used in graph";
    GraphNoGraphCollection = 1932, 404, "collection _graphs does not exist";
    GraphInvalidNumberOfArguments = 1935, 400, "invalid number of arguments. Expected: ";
    GraphInvalidParameter = 1936, 400, "invalid parameter type.";
    GraphCollectionUsedInOrphans = 1938, 400, "collection used in orphans";
    GraphEdgeColDoesNotExist = 1939, 400, "edge collection does not exist or is not part of the graph";
    GraphEmpty = 1940, 400, "empty graph";
    GraphInternalDataCorrupt = 1941, 500, "internal graph data corrupt";
    GraphMustNotDropCollection = 1942, 400, "must not drop collection while part of graph";
    GraphCreateMalformedOrphanList = 1943, 400, "malformed orphan list";
    GraphEdgeDefinitionIsDocument = 1944, 400, "edge definition collection is a document collection";
    GraphReferencedVertexCollectionNotUsed = 1947, 404, "referenced vertex collection is not part of the graph";
    GraphNegativeEdgeWeight = 1948, 400, "negative edge weight found";
    GraphCollectionNotPartOfTheGraph = 1949, 404, "the given collection is not part of the graph";
    SimpleClientUnknownError = 2000, 500, "unknown client error";
    SimpleClientCouldNotConnect = 2001, 500, "could not connect to server";
    SimpleClientCouldNotWrite = 2002, 500, "could not write to server";
    SimpleClientCouldNotRead = 2003, 500, "could not read from server";
    QueueFull = 21003, 503, "named queue is full";
    QueueTimeRequirementViolated = 21004, 412, "queue time violated";
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.default_message(), self.number())
    }
}

/// A failure as ArangoDB reports it: an error number and a message.
///
/// The message defaults to the code's default message; callers add detail with
/// [`Error::with_message`]. `extra` carries the few additional attributes some errors put into
/// the envelope (for example `_id`, `_key` and `_rev` on a revision conflict).
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// ArangoDB's `errorNum`.
    pub code: ErrorCode,
    /// `errorMessage`.
    pub message: String,
    /// Overrides the status taken from the code (ArangoDB answers a revision mismatch with
    /// 412 although its errorNum 1200 usually means 409).
    pub status_override: Option<u16>,
    /// Extra attributes merged into the error envelope.
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Error {
    /// An error with the code's default message.
    pub fn new(code: ErrorCode) -> Error {
        Error {
            code,
            message: code.default_message().to_string(),
            status_override: None,
            extra: None,
        }
    }

    /// An error with a specific message.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            status_override: None,
            extra: None,
        }
    }

    /// Replaces the HTTP status that the code alone would give.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Error {
        self.status_override = Some(status);
        self
    }

    /// Adds an attribute to the error envelope.
    #[must_use]
    pub fn with_extra(mut self, key: &str, value: serde_json::Value) -> Error {
        self.extra
            .get_or_insert_with(serde_json::Map::new)
            .insert(key.to_string(), value);
        self
    }

    /// ArangoDB's `errorNum`.
    pub fn number(&self) -> u32 {
        self.code.number()
    }

    /// The HTTP status this error is answered with.
    pub fn http_status(&self) -> u16 {
        self.status_override
            .unwrap_or_else(|| self.code.http_status())
    }

    /// The error envelope `{"error":true,"errorNum":N,"errorMessage":"…","code":S}`.
    pub fn to_envelope(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert("code".into(), self.http_status().into());
        map.insert("error".into(), true.into());
        map.insert("errorMessage".into(), self.message.clone().into());
        map.insert("errorNum".into(), self.number().into());
        if let Some(extra) = &self.extra {
            for (k, v) in extra {
                map.insert(k.clone(), v.clone());
            }
        }
        serde_json::Value::Object(map)
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Error {
        Error::new(code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (error {})", self.message, self.number())
    }
}

impl std::error::Error for Error {}

/// Shorthand used across the workspace.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn numbers_are_unique_and_round_trip() {
        let mut seen = HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(
                seen.insert(code.number()),
                "duplicate number {}",
                code.number()
            );
            assert_eq!(ErrorCode::from_number(code.number()), Some(code));
        }
        assert_eq!(ErrorCode::from_number(999_999), None);
    }

    #[test]
    fn statuses_follow_arangodb_response_code_rule() {
        let cases = [
            (ErrorCode::HttpCorruptedJson, 400),
            (ErrorCode::DocumentNotFound, 404),
            (ErrorCode::DataSourceNotFound, 404),
            (ErrorCode::DatabaseNotFound, 404),
            (ErrorCode::ArangoConflict, 409),
            (ErrorCode::UniqueConstraintViolated, 409),
            (ErrorCode::DuplicateName, 409),
            (ErrorCode::DocumentKeyBad, 400),
            (ErrorCode::QueryParse, 400),
            (ErrorCode::CursorNotFound, 404),
            (ErrorCode::QueryKilled, 410),
            (ErrorCode::ResourceLimit, 500),
            (ErrorCode::QueueFull, 503),
            (ErrorCode::ReadOnly, 403),
            (ErrorCode::UseSystemDatabase, 403),
            (ErrorCode::HttpMethodNotAllowed, 405),
        ];
        for (code, status) in cases {
            assert_eq!(code.http_status(), status, "{code:?}");
        }
    }

    #[test]
    fn envelope_has_exactly_the_four_keys() {
        let env = Error::new(ErrorCode::UniqueConstraintViolated).to_envelope();
        let obj = env.as_object().unwrap();
        let mut keys: Vec<_> = obj.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["code", "error", "errorMessage", "errorNum"]);
        assert_eq!(obj["errorNum"], 1210);
        assert_eq!(obj["code"], 409);
        assert_eq!(obj["error"], true);
    }

    #[test]
    fn status_override_and_extra_attributes() {
        let err = Error::new(ErrorCode::ArangoConflict)
            .with_status(412)
            .with_extra("_rev", "_abc---".into());
        assert_eq!(err.http_status(), 412);
        let env = err.to_envelope();
        assert_eq!(env["code"], 412);
        assert_eq!(env["_rev"], "_abc---");
    }
}
