//! The baseline of `bench/run.sh`: the smallest goose 0.19 load test that
//! does what tminus's burst does (N users, one GET with a Bearer key, fixed
//! duration), so tminus's overhead can be stated as a ratio to it.
//!
//! Usage: bare-goose URL USERS SECONDS   (loopback targets only)

use goose::config::GooseConfiguration;
use goose::prelude::*;

async fn count(user: &mut GooseUser) -> TransactionResult {
    let req = user
        .get_request_builder(&GooseMethod::Get, "/public/v1/messages/count")?
        .header("Authorization", "Bearer ref_load_key");
    let r = GooseRequest::builder().set_request_builder(req).build();
    let _ = user.request(r).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    let args: Vec<String> = std::env::args().collect();
    let (url, users, secs) = match args.as_slice() {
        [_, u, n, s] => (u.clone(), n.clone(), s.clone()),
        _ => {
            eprintln!("usage: bare-goose URL USERS SECONDS");
            std::process::exit(2);
        }
    };
    assert!(
        url.starts_with("http://127.0.0.1"),
        "bench only runs against 127.0.0.1"
    );
    let mut cfg = GooseConfiguration::default();
    cfg.host = Some(url);
    cfg.no_telnet = true;
    cfg.quiet = 1;
    cfg.no_print_metrics = true;
    let metrics = GooseAttack::initialize_with_config(cfg)?
        .set_default(
            GooseDefault::TestPlan,
            format!("{users},0s;{users},{secs}s;0,0s").as_str(),
        )?
        .register_scenario(scenario!("bare").register_transaction(transaction!(count)))
        .execute()
        .await?;
    let total: usize = metrics
        .requests
        .values()
        .map(|r| r.success_count + r.fail_count)
        .sum();
    eprintln!("requests={total}");
    Ok(())
}
