//! `tminus init --from-openapi` on documents nobody here wrote (issue 37
//! item 1):
//! - the OpenAPI Initiative's examples, read from `../shared/openapi/`
//!   beside the checkout (copied into nothing here; the test says so and
//!   skips when that folder is absent, as in a clone on its own; CI has it);
//! - a document FastAPI itself generates at test time (Debian's
//!   python3-fastapi, or from PyPI) for a tiny app with per-operation
//!   `security: [{HTTPBearer: []}]` and no root `security`, read from a file
//!   and from its `/openapi.json` URL; the written suite validates with only
//!   the credential's variable set and runs against the app served by
//!   uvicorn on 127.0.0.1 with no error caused by tminus. Without FastAPI
//!   the test skips with a message, unless TMINUS_REQUIRE_FASTAPI=1
//!   (`.ci/run` sets it and installs FastAPI);
//! - a document Django REST framework's own generator writes (Debian's
//!   python3-djangorestframework, `rest_framework.schemas.openapi`: OpenAPI
//!   3.0.2, three request media types, no security at all, a header
//!   parameter declared the DRF way, in an `AutoSchema` subclass), for an
//!   app served threaded by wsgiref; the written suite runs with no error.
//!   Skipped without DRF unless TMINUS_REQUIRE_FASTAPI=1 (CI installs both).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{not_passing, repo, run_with_json, stderr, tminus, verdicts};

fn init(dir: &Path, source: &str, out: &str) -> std::process::Output {
    tminus(
        dir,
        &["init", "--from-openapi", source, "-o", out],
        &[],
        Duration::from_secs(60),
    )
}

#[test]
fn the_openapi_initiatives_examples_give_suites_that_validate() {
    let shared = repo().join("../shared/openapi");
    if !shared.is_dir() {
        eprintln!(
            "skipped: {} is absent (the OpenAPI Initiative's examples live beside the \
             checkout, never in it; CI has them)",
            shared.display()
        );
        return;
    }
    let mut written = 0;
    for name in [
        "petstore.yaml",
        "petstore-expanded.yaml",
        "api-with-examples.yaml",
        "callback-example.yaml",
        "link-example.yaml",
        "uspto.yaml",
    ] {
        let doc = shared.join(name);
        let dir = tempfile::tempdir().unwrap();
        let out = init(dir.path(), doc.to_str().unwrap(), "suite.yaml");
        let suite = dir.path().join("suite.yaml");
        match out.status.code() {
            Some(0) => {}
            // A document with nothing tminus can certify says so, and why.
            Some(2) => {
                assert!(
                    stderr(&out).contains("no check could be written"),
                    "{name}: {}",
                    stderr(&out)
                );
                assert!(!suite.exists(), "{name}");
                continue;
            }
            other => panic!("{name}: exit {other:?}: {}", stderr(&out)),
        }
        written += 1;
        let text = std::fs::read_to_string(&suite).unwrap();
        // None of these documents asks for credentials: none is written.
        assert!(!text.contains("${secret."), "{name}:\n{text}");
        let v = tminus(
            dir.path(),
            &["validate", suite.to_str().unwrap()],
            &[],
            Duration::from_secs(30),
        );
        assert_eq!(v.status.code(), Some(0), "{name}: {}\n{text}", stderr(&v));
        if name == "uspto.yaml" {
            // `{scheme}://developer.uspto.gov/ds-api`: the base path is honoured.
            assert!(text.contains("path: \"/ds-api/"), "{name}:\n{text}");
        }
        if name == "petstore.yaml" {
            assert!(text.contains("path: \"/v1/pets\""), "{name}:\n{text}");
        }
    }
    assert!(written >= 4, "only {written} of 6 documents gave a suite");
}

/// The tiny app: Bearer per operation (FastAPI's `HTTPBearer`), POST
/// /orders with an `Idempotency-Key` header parameter that it honours,
/// GET /orders/{order_id}, and a counter of executions the POST names with
/// `x-tminus-effects` (docs/contract.md). `openapi` prints its document;
/// `serve` binds 127.0.0.1:0, prints the port, serves.
const APP: &str = r#"
import hashlib, json, os, socket, sys, threading
from fastapi import Depends, FastAPI, Header, HTTPException
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

app = FastAPI(title="Orders", version="1.0.0")
bearer = HTTPBearer()
TOKEN = os.environ.get("ORDERS_TOKEN", "")
lock = threading.Lock()
orders, keys, executions = {}, {}, {"count": 0}


def auth(c: HTTPAuthorizationCredentials = Depends(bearer)):
    if not TOKEN or c.credentials != TOKEN:
        raise HTTPException(status_code=401, detail="bad token")


class OrderIn(BaseModel):
    item: str
    quantity: int


class Order(BaseModel):
    id: int
    item: str
    quantity: int


class Count(BaseModel):
    count: int


@app.post("/orders", response_model=Order, status_code=201,
          responses={409: {"description": "the key is in use with another body"}},
          openapi_extra={"x-tminus-effects": {"path": "/orders/count", "value": "$.count"}})
def create_order(order: OrderIn, idempotency_key: str = Header(..., alias="Idempotency-Key"),
                 _=Depends(auth)):
    body = hashlib.sha256(json.dumps(order.dict(), sort_keys=True).encode()).hexdigest()
    with lock:
        if idempotency_key in keys:
            seen, stored = keys[idempotency_key]
            if seen != body:
                return JSONResponse(status_code=409, content={"detail": "key reused"})
            return JSONResponse(status_code=201, content=stored)
        executions["count"] += 1
        new = {"id": len(orders) + 1, **order.dict()}
        orders[new["id"]] = new
        keys[idempotency_key] = (body, new)
        return JSONResponse(status_code=201, content=new)


@app.get("/orders/count", response_model=Count)
def count_orders(_=Depends(auth)):
    return {"count": executions["count"]}


@app.get("/orders/{order_id}", response_model=Order)
def get_order(order_id: int, _=Depends(auth)):
    if order_id not in orders:
        raise HTTPException(status_code=404, detail="no such order")
    return orders[order_id]


if sys.argv[1] == "openapi":
    print(json.dumps(app.openapi()))
else:
    import uvicorn
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[s])
"#;

const TOKEN: &str = "orders-test-token-3f9a";

/// Writes the app `source` into `dir` and the document it generates
/// (`app.py openapi`) beside it: the app's path, the document's, and it.
fn dump_document(python: &Path, source: &str, dir: &Path) -> (PathBuf, PathBuf, serde_json::Value) {
    let app = dir.join("app.py");
    std::fs::write(&app, source).unwrap();
    let dumped = Command::new(python)
        .arg(&app)
        .arg("openapi")
        .output()
        .unwrap();
    assert!(dumped.status.success(), "{}", stderr(&dumped));
    let doc_path = dir.join("openapi.json");
    std::fs::write(&doc_path, &dumped.stdout).unwrap();
    let doc = serde_json::from_slice(&dumped.stdout).unwrap();
    (app, doc_path, doc)
}

/// The app's process, killed (by its own pid) when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(python: &Path, app: &Path) -> Served {
    let mut child = Command::new(python)
        .arg(app)
        .arg("serve")
        .env("ORDERS_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the app");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the app prints its port");
    let url = format!("http://127.0.0.1:{port}");
    // uvicorn starts serving just after the port is printed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the app never listened on {url}");
        std::thread::sleep(Duration::from_millis(100));
    }
    Served { child, url }
}

#[test]
fn a_fastapi_document_with_per_operation_bearer_gives_a_suite_that_runs_with_its_credential() {
    let Some(python) = common::required_python("fastapi, uvicorn") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (app, doc_path, doc) = dump_document(&python, APP, dir.path());
    // What FastAPI writes: security per operation, none at the root.
    assert!(doc.get("security").is_none(), "{doc}");
    assert_eq!(
        doc.pointer("/paths/~1orders/post/security"),
        Some(&serde_json::json!([{"HTTPBearer": []}])),
        "{doc}"
    );
    let served = serve(&python, &app);

    let started = Instant::now();
    let out = init(dir.path(), doc_path.to_str().unwrap(), "suite.yaml");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let suite = dir.path().join("suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    assert!(
        text.contains("    \"Authorization\": \"Bearer ${secret.TMINUS_API_KEY}\"\n"),
        "{text}"
    );
    assert!(
        !text.contains("TMINUS_API_KEY:-"),
        "no fallback value:\n{text}"
    );
    assert!(!text.contains("ref_test_key"), "{text}");
    for kind in ["replay", "mismatch", "concurrent"] {
        assert!(
            text.contains(&format!("  - id: create-order-orders-post-{kind}\n")),
            "{text}"
        );
    }
    assert!(text.contains("reject_status: [409, 422]"), "{text}");

    // The same document read from the app's URL, saved beside the suite.
    let url_doc = format!("{}/openapi.json", served.url);
    let out = init(dir.path(), &url_doc, "from-url.yaml");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let saved = dir.path().join("from-url.openapi.json");
    assert!(saved.exists(), "{}", stderr(&out));
    let from_url = std::fs::read_to_string(dir.path().join("from-url.yaml")).unwrap();
    assert!(
        from_url.contains(&format!("fetched from {url_doc}")),
        "{from_url}"
    );
    assert!(
        from_url.contains("openapi: \"from-url.openapi.json\""),
        "{from_url}"
    );
    // A URL that is not served is an error naming it; nothing is written.
    let missing = format!("{}/nope.json", served.url);
    let out = init(dir.path(), &missing, "nope.yaml");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&missing), "{}", stderr(&out));
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
    assert!(!dir.path().join("nope.yaml").exists());
    assert!(!dir.path().join("nope.openapi.json").exists());

    // Without the credential, validate names it; with it alone, it passes.
    let s = suite.to_str().unwrap();
    let v = tminus(dir.path(), &["validate", s], &[], Duration::from_secs(30));
    assert_eq!(v.status.code(), Some(2), "{}", stderr(&v));
    assert!(stderr(&v).contains("TMINUS_API_KEY"), "{}", stderr(&v));
    let key = ("TMINUS_API_KEY", TOKEN);
    let v = tminus(
        dir.path(),
        &["validate", s],
        &[key],
        Duration::from_secs(30),
    );
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));

    let run_dir = tempfile::tempdir().unwrap();
    let (json, out) = run_with_json(run_dir.path(), &suite, &served.url, &[], &[key]);
    let elapsed = started.elapsed();
    let verdicts = verdicts(&json);
    let report = std::fs::read_to_string(&json).unwrap();
    eprintln!(
        "init -> validate -> first run on the FastAPI app: {elapsed:?}, exit {:?}; \
         not passing: {:?}",
        out.status.code(),
        not_passing(&verdicts)
    );
    // No error: every check ran and judged the app.
    let errors: Vec<&(String, String)> = verdicts.iter().filter(|(_, v)| v == "error").collect();
    assert!(errors.is_empty(), "{errors:?}\n{}\n{report}", stderr(&out));
    assert_ne!(out.status.code(), Some(3), "{}", stderr(&out));
    // The credential went with every request: the app's idempotency is
    // judged (and it honours the key), never a 401.
    for kind in ["replay", "mismatch", "concurrent"] {
        let id = format!("orders/create-order-orders-post-{kind}");
        assert!(
            verdicts.iter().any(|(c, v)| c == &id && v == "pass"),
            "{id}: {verdicts:?}\n{report}"
        );
    }
    assert!(!report.contains("status 401"), "{report}");
}

/// A Django REST framework app in one file (see the module's doc).
const DRF_APP: &str = r#"
# A small Django REST framework API, in one file: orders with an
# Idempotency-Key header, declared by the view's AutoSchema, as a DRF user
# declares a header. `openapi` prints the document DRF generates;
# `serve` binds 127.0.0.1:0, prints the port, serves (threaded).
import hashlib, json, socket, sys, threading

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="drf-test-app",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework"],
    MIDDLEWARE=[],
    DATABASES={},
    REST_FRAMEWORK={
        "DEFAULT_AUTHENTICATION_CLASSES": [],
        "DEFAULT_PERMISSION_CLASSES": [],
        "UNAUTHENTICATED_USER": None,
        "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    },
)
django.setup()

from django.urls import path
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.schemas.openapi import AutoSchema, SchemaGenerator
from rest_framework.views import APIView

lock = threading.Lock()
orders, keys, executions = {}, {}, {"count": 0}


class OrderSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    item = serializers.CharField(max_length=100)
    quantity = serializers.IntegerField(min_value=1)


class CountSerializer(serializers.Serializer):
    count = serializers.IntegerField()


class KeyedSchema(AutoSchema):
    def get_operation(self, path, method):
        op = super().get_operation(path, method)
        if method == "POST":
            op["parameters"].append({
                "name": "Idempotency-Key", "in": "header", "required": True,
                "schema": {"type": "string"},
                "description": "a repeat with the same key returns the first answer"})
            op["responses"]["409"] = {"description": "the key is in use with another body"}
            op["x-tminus-effects"] = {"path": "/orders/count/", "value": "$.count"}
        return op


class OrderList(APIView):
    schema = KeyedSchema(operation_id_base="Order")

    def get_serializer(self, *args, **kwargs):
        return OrderSerializer(*args, **kwargs)

    def get(self, request):
        return Response(list(orders.values()))

    def post(self, request):
        key = request.headers.get("Idempotency-Key")
        if not key:
            return Response({"detail": "Idempotency-Key is required"}, status=400)
        s = OrderSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        body = hashlib.sha256(json.dumps(s.validated_data, sort_keys=True).encode()).hexdigest()
        with lock:
            if key in keys:
                seen, stored = keys[key]
                if seen != body:
                    return Response({"detail": "key reused"}, status=409)
                return Response(stored, status=201)
            executions["count"] += 1
            new = {"id": len(orders) + 1, **s.validated_data}
            orders[new["id"]] = new
            keys[key] = (body, new)
            return Response(new, status=status.HTTP_201_CREATED)


class OrderCount(APIView):
    schema = AutoSchema(operation_id_base="OrderCount")

    def get_serializer(self, *args, **kwargs):
        return CountSerializer(*args, **kwargs)

    def get(self, request):
        return Response({"count": executions["count"]})


class OrderDetail(APIView):
    schema = AutoSchema(operation_id_base="Order")

    def get_serializer(self, *args, **kwargs):
        return OrderSerializer(*args, **kwargs)

    def get(self, request, pk):
        if pk not in orders:
            return Response({"detail": "Not found."}, status=404)
        return Response(orders[pk])


urlpatterns = [
    path("orders/", OrderList.as_view()),
    path("orders/count/", OrderCount.as_view()),
    path("orders/<int:pk>/", OrderDetail.as_view()),
]

if sys.argv[1] == "openapi":
    gen = SchemaGenerator(title="Orders", version="1.0.0", patterns=urlpatterns)
    print(json.dumps(gen.get_schema(request=None, public=True)))
else:
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    class Threaded(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    s = Threaded(("127.0.0.1", 0), Quiet)
    s.set_app(get_wsgi_application())
    print(s.server_address[1], flush=True)
    s.serve_forever()
"#;

#[test]
fn a_django_rest_framework_document_gives_a_suite_that_runs_without_errors() {
    let Some(python) = common::required_python("django, rest_framework, uritemplate, yaml") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (app, doc_path, doc) = dump_document(&python, DRF_APP, dir.path());
    // What DRF writes: 3.0.2, a body in three media types, no security.
    assert_eq!(doc["openapi"], "3.0.2", "{doc}");
    assert!(
        doc.pointer("/paths/~1orders~1/post/requestBody/content/multipart~1form-data")
            .is_some(),
        "{doc}"
    );
    let served = serve(&python, &app);

    let started = Instant::now();
    let out = init(dir.path(), doc_path.to_str().unwrap(), "suite.yaml");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let suite = dir.path().join("suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    for kind in ["replay", "mismatch", "concurrent"] {
        assert!(
            text.contains(&format!("  - id: create-order-{kind}\n")),
            "{text}"
        );
    }
    // No security in the document: no credential asked for.
    assert!(!text.contains("${secret."), "{text}");
    let v = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));

    let run_dir = tempfile::tempdir().unwrap();
    let (json, out) = run_with_json(run_dir.path(), &suite, &served.url, &[], &[]);
    let elapsed = started.elapsed();
    let verdicts = verdicts(&json);
    let report = std::fs::read_to_string(&json).unwrap();
    eprintln!(
        "init -> validate -> first run on the DRF app: {elapsed:?}, exit {:?}; not passing: {:?}",
        out.status.code(),
        not_passing(&verdicts)
    );
    let errors: Vec<&(String, String)> = verdicts.iter().filter(|(_, v)| v == "error").collect();
    assert!(errors.is_empty(), "{errors:?}\n{}\n{report}", stderr(&out));
    assert_ne!(out.status.code(), Some(3), "{}", stderr(&out));
    // The app honours the key: its idempotency passes, judged by the
    // counter the document names, and its answers conform to DRF's document.
    for kind in ["replay", "mismatch", "concurrent"] {
        let id = format!("orders/create-order-{kind}");
        assert!(
            verdicts.iter().any(|(c, v)| c == &id && v == "pass"),
            "{id}: {verdicts:?}\n{report}"
        );
    }
}
