//! boxmaker-job: one run of a scheduled job, as its unit (`boxmaker-job-<name>`, its own
//! DynamicUser) starts it. The runner registers the run with brokerd on the jobs side of
//! broker.sock (brokerd takes the job from the runner's user and mints the run's session),
//! asks loopd for the run's one turn on the jobs side of loop.sock, ends the run, and
//! delivers the result, or what failed, through gatewayd in the job's own thread; or, for
//! `deliver = "note:NAME"`, has brokerd write it to the note before the run ends. It never
//! waits on a terminal: an `ask` is answered on Mattermost or expires.

mod error;
mod report;
mod run;

use config::Config;

pub use error::Error;
pub use report::{Report, Said};
pub use run::Finished;

#[derive(Debug, clap::Parser)]
#[command(
    name = "boxmaker-job",
    version,
    about = "one run of a boxmaker scheduled job"
)]
pub struct Args {
    #[command(flatten)]
    pub common: daemon::CommonArgs,
    /// The job to run (a `[[jobs]]` name).
    #[arg(long, value_name = "NAME")]
    pub job: String,
}

pub fn run(args: &Args) -> Result<Finished, Error> {
    let path = &args.common.config;
    let config = Config::load(path).map_err(Error::Config)?;
    let job = config
        .jobs
        .iter()
        .find(|j| j.name.as_str() == args.job)
        .cloned()
        .ok_or_else(|| Error::NoJob {
            job: args.job.clone(),
            config: path.clone(),
        })?;
    if args.common.check_config {
        daemon::log::info(format_args!("{}: good; job {}", path.display(), job.name));
        return Ok(Finished::Done);
    }
    run::run(&config, &job)
}
