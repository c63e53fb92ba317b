//! The contract module on published and hand-made documents: OpenAPI 3.0 and
//! 3.1, YAML and JSON, local and relative-file `$ref`s, 3.0's `nullable` and
//! boolean bounds, server base paths, status ranges and `default`, and the
//! loader's refusals (a file outside the folder, a cycle, a dangling `$ref`,
//! broken YAML with its line and column).

use std::path::{Path, PathBuf};

use serde_json::json;
use tminus::contract::{Contract, Level, Seen, Verdict, Version};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openapi")
        .join(name)
}

fn judge(
    c: &Contract,
    method: &str,
    url: &str,
    status: u16,
    headers: &[(&str, &str)],
    body: serde_json::Value,
) -> Verdict {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let body = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).unwrap()
    };
    c.judge(
        method,
        url,
        &Seen {
            status,
            headers: &headers,
            body: &body,
        },
    )
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn violations(v: Verdict) -> Vec<(Level, String, String)> {
    match v {
        Verdict::Operation { violations, .. } => violations
            .into_iter()
            .map(|v| (v.level, v.pointer, v.message))
            .collect(),
        other => panic!("not an operation: {other:?}"),
    }
}

#[test]
fn petstore_3_0_loads_and_judges() {
    let c = Contract::load(&fixture("petstore.yaml")).unwrap();
    assert_eq!(c.version, Version::V30);
    let ids: Vec<&str> = c.operations().iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["listPets", "createPets", "showPetById"]);
    // Server base path /v1; the template matches one segment.
    let url = "http://petstore.swagger.io/v1/pets/7";
    assert_eq!(
        judge(
            &c,
            "GET",
            url,
            200,
            &[JSON],
            json!({"id": 7, "name": "rex"})
        ),
        Verdict::Operation {
            operation: "showPetById".into(),
            index: 2,
            violations: vec![]
        }
    );
    let v = violations(judge(
        &c,
        "GET",
        url,
        200,
        &[JSON],
        json!({"id": "7", "name": "rex"}),
    ));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].0, v[0].1.as_str()), (Level::Must, "#/id"));
    // Any other status is `default`: an Error body.
    assert!(violations(judge(
        &c,
        "GET",
        url,
        503,
        &[JSON],
        json!({"code": 1, "message": "x"})
    ))
    .is_empty());
    let v = violations(judge(&c, "GET", url, 503, &[JSON], json!({"code": 1})));
    assert_eq!(v[0].1, "#", "{v:?}");
    assert!(v[0].2.contains("message"), "{v:?}");
    // A documented JSON body answered as HTML.
    let v = violations(judge(
        &c,
        "GET",
        url,
        200,
        &[("Content-Type", "text/html")],
        json!("x"),
    ));
    assert_eq!(v[0].0, Level::Must);
    assert!(v[0].2.contains("text/html"), "{v:?}");
    // Outside the base path there is no operation.
    assert_eq!(
        judge(&c, "GET", "http://h/pets/7", 404, &[], json!(null)),
        Verdict::NotServed
    );
    assert_eq!(
        judge(&c, "GET", "http://h/pets/7", 200, &[JSON], json!({})),
        Verdict::Undocumented {
            path: "/pets/7".into()
        }
    );
    // 201 without content: an empty body is fine.
    assert!(violations(judge(&c, "POST", "http://h/v1/pets", 201, &[], json!(null))).is_empty());
}

#[test]
fn petstore_expanded_all_of_and_204() {
    let c = Contract::load(&fixture("petstore-expanded.yaml")).unwrap();
    let url = "https://petstore.swagger.io/v2/pets/3";
    assert!(violations(judge(
        &c,
        "GET",
        url,
        200,
        &[JSON],
        json!({"id": 3, "name": "a"})
    ))
    .is_empty());
    // allOf: NewPet's `name` is required too.
    let v = violations(judge(&c, "GET", url, 200, &[JSON], json!({"id": 3})));
    assert!(v[0].2.contains("name"), "{v:?}");
    assert!(violations(judge(&c, "DELETE", url, 204, &[], json!(null))).is_empty());
    match judge(&c, "GET", url, 200, &[JSON], json!({"id": 3, "name": "a"})) {
        Verdict::Operation { operation, .. } => assert_eq!(operation, "find pet by id"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn webhook_example_3_1_has_no_paths() {
    let c = Contract::load(&fixture("webhook-example.yaml")).unwrap();
    assert_eq!(c.version, Version::V31);
    assert!(c.operations().is_empty());
}

#[test]
fn the_reference_document_is_3_1_json() {
    let c = Contract::from_text(tminus::reference::OPENAPI_JSON, "openapi.json").unwrap();
    assert_eq!(c.version, Version::V31);
    assert!(c.operations().len() >= 13, "{}", c.operations().len());
    let op = c
        .find("POST", "http://127.0.0.1:1/public/v1/scenarios/abc/run")
        .unwrap();
    assert_eq!(op.id, "runScenario");
    assert_eq!(
        c.find("GET", "/public/v1/messages/count").unwrap().id,
        "countMessages"
    );
}

/// A documented header that is present is judged against its schema, read
/// as OpenAPI's `simple` style reads it: `integer` headers as numbers,
/// strings as they are; a missing optional header is not judged.
#[test]
fn header_values_are_judged_against_their_schemas() {
    let c = Contract::from_text(tminus::reference::OPENAPI_JSON, "openapi.json").unwrap();
    let url = "http://127.0.0.1:1/public/v1/contacts";
    let body = serde_json::json!({"error": {"code": "INVALID_API_KEY", "message": "x"}});
    let ids = [
        ("X-Request-Id", "req_1"),
        ("Trace-Id", "0af7651916cd43dd8448eb211c80319c"),
        (
            "traceresponse",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = vec![JSON];
        h.extend_from_slice(&ids);
        h.extend_from_slice(extra);
        h
    };
    let v = violations(judge(
        &c,
        "GET",
        url,
        401,
        &with(&[("WWW-Authenticate", "Bearer")]),
        body.clone(),
    ));
    assert!(v.is_empty(), "{v:?}");
    let v = violations(judge(
        &c,
        "GET",
        url,
        401,
        &with(&[("WWW-Authenticate", "Bearer error=\"invalid_token\"")]),
        body.clone(),
    ));
    assert!(v.is_empty(), "parameters are allowed: {v:?}");
    let v = violations(judge(
        &c,
        "GET",
        url,
        401,
        &with(&[("WWW-Authenticate", "Basic realm=\"x\"")]),
        body.clone(),
    ));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].0, Level::Must);
    assert!(
        v[0].1.ends_with("/headers/WWW-Authenticate/schema"),
        "{v:?}"
    );
    assert!(v[0].2.contains("`Basic realm=\"x\"`"), "{v:?}");

    // An integer header: a number passes, words and negatives fail.
    let ok = [
        ("X-RateLimit-Limit", "60"),
        ("X-RateLimit-Remaining", "59"),
        ("X-RateLimit-Reset", "30"),
    ];
    let list = |extra: &[(&'static str, &'static str)]| {
        let mut h = with(extra);
        h.push(("Content-Type", "application/json"));
        violations(judge(
            &c,
            "GET",
            url,
            200,
            &h,
            serde_json::json!({"items": [], "next_cursor": null}),
        ))
        .into_iter()
        .filter(|v| v.1.contains("/headers/"))
        .collect::<Vec<_>>()
    };
    assert!(list(&ok).is_empty(), "{:?}", list(&ok));
    let bad = list(&[
        ("X-RateLimit-Remaining", "many"),
        ("X-RateLimit-Limit", "-1"),
    ]);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad.iter().any(|v| v.2.contains("`many` is not a number")),
        "{bad:?}"
    );
}

#[test]
fn split_3_0_document_with_relative_refs_and_normalised_schemas() {
    let c = Contract::load(&fixture("split/api.yaml")).unwrap();
    let order = "https://api.example.com/v1/orders/o1";
    let ok = json!({"id": "o1", "note": null, "parent": {"id": "o0", "note": "x", "parent": null}});
    assert!(violations(judge(&c, "GET", order, 200, &[JSON], ok)).is_empty());
    // The recursive schema (a file referring to itself) is followed; the
    // nullable `$ref` is `anyOf: [ref, null]`, so the error is at the parent.
    let bad = json!({"id": "o1", "note": null, "parent": {"id": 5, "note": null, "parent": null}});
    let v = violations(judge(&c, "GET", order, 200, &[JSON], bad));
    assert_eq!(v[0].1, "#/parent", "{v:?}");
    assert!(v[0].2.contains("anyOf"), "{v:?}");
    // `4XX` with its own media type; a 5XX is undocumented.
    let problem = ("Content-Type", "application/problem+json; charset=utf-8");
    assert!(violations(judge(
        &c,
        "GET",
        order,
        404,
        &[problem],
        json!({"title": "no"})
    ))
    .is_empty());
    let v = violations(judge(&c, "GET", order, 500, &[JSON], json!({})));
    assert_eq!(v[0].0, Level::Must);
    assert!(
        v[0].2
            .contains("status 500 is not documented (documented: 200, 4XX)"),
        "{v:?}"
    );
    assert_eq!(v[0].1, "#/paths/~1orders~1{id}/get/responses");
    // The literal path wins over the template; boolean exclusiveMinimum
    // became 2020-12's number: 0 is out.
    let count = "https://api.example.com/v1/orders/count";
    let total = ("X-Total", "3");
    assert!(violations(judge(
        &c,
        "GET",
        count,
        200,
        &[JSON, total],
        json!({"total": 1})
    ))
    .is_empty());
    let v = violations(judge(
        &c,
        "GET",
        count,
        200,
        &[JSON, total],
        json!({"total": 0}),
    ));
    assert_eq!(v[0].1, "#/total", "{v:?}");
    // The required header, missing: a SHOULD, pointing into the document.
    let v = violations(judge(&c, "GET", count, 200, &[JSON], json!({"total": 1})));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].0, Level::Should);
    assert_eq!(
        v[0].1,
        "#/paths/~1orders~1count/get/responses/200/headers/X-Total"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

const HEAD: &str = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n";

#[test]
fn the_loader_refuses_what_it_cannot_trust() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = write(tmp.path(), "secret.yaml", "X: {type: string}\n");
    let dir = tmp.path().join("api");
    let escape = write(
        &dir,
        "escape.yaml",
        &format!("{HEAD}components:\n  schemas:\n    A: {{$ref: '../secret.yaml#/X'}}\n"),
    );
    let e = Contract::load(&escape).unwrap_err();
    assert!(e.contains("leads outside the document's folder"), "{e}");
    assert!(outside.exists());

    let cycle = write(
        &dir,
        "cycle.yaml",
        &format!("{HEAD}paths:\n  /a:\n    get:\n      responses:\n        '200': {{$ref: '#/components/responses/A'}}\ncomponents:\n  responses:\n    A: {{$ref: '#/components/responses/B'}}\n    B: {{$ref: '#/components/responses/A'}}\n"),
    );
    let e = Contract::load(&cycle).unwrap_err();
    assert!(e.contains("cycle"), "{e}");

    let dangling = write(
        &dir,
        "dangling.yaml",
        &format!("{HEAD}components:\n  schemas:\n    A: {{$ref: '#/components/schemas/Nope'}}\n"),
    );
    let e = Contract::load(&dangling).unwrap_err();
    assert!(e.contains("leads nowhere"), "{e}");

    let remote = write(
        &dir,
        "remote.yaml",
        &format!("{HEAD}components:\n  schemas:\n    A: {{$ref: 'https://example.com/a.yaml'}}\n"),
    );
    let e = Contract::load(&remote).unwrap_err();
    assert!(e.contains("remote references are not followed"), "{e}");

    let broken = write(&dir, "broken.yaml", "openapi: 3.1.0\ninfo: [\n");
    let e = Contract::load(&broken).unwrap_err();
    assert!(e.contains("broken.yaml:"), "{e}");
    assert!(e.contains("not valid YAML"), "{e}");

    let json = write(
        &dir,
        "broken.json",
        "{\n  \"openapi\": \"3.1.0\",\n  oops\n}\n",
    );
    let e = Contract::load(&json).unwrap_err();
    assert!(e.contains("broken.json:3:"), "{e}");

    let swagger = write(&dir, "swagger.yaml", "swagger: '2.0'\n");
    assert!(Contract::load(&swagger)
        .unwrap_err()
        .contains("Swagger 2.0"));
}
