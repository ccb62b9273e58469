//! Every post of the channel, once: approval replies go to the desk (never to loopd),
//! an owner's post becomes a turn, anything else is left alone. Turns of different threads
//! run side by side (one may wait minutes on an approval); a thread's own turns run in
//! order, one at a time.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use config::Gateway;
use daemon::{lock, log};
use proto::SessionId;

use crate::context::Context;
use crate::desk::Desk;
use crate::mm::Post;
use crate::reply;

/// Threads answered at once at most; further owner posts wait their turn.
const MAX_TURNS: usize = 8;

pub struct Dispatch {
    ctx: Arc<Context>,
    /// Where replies on approval posts go.
    desk: Arc<Desk>,
    /// The bot's own user id: its posts are never answered.
    bot: String,
    gateway: Gateway,
    loop_sock: PathBuf,
    /// brokerd's chat side: each owner's post is registered there before loopd gets it.
    broker_sock: PathBuf,
    busy: Mutex<Busy>,
}

#[derive(Default)]
struct Busy {
    /// Thread root → posts waiting behind the turn running in it.
    threads: HashMap<String, VecDeque<Post>>,
    /// Posts of other threads waiting for a free slot.
    overflow: VecDeque<Post>,
}

fn root_of(post: &Post) -> String {
    if post.root_id.is_empty() {
        post.id.clone()
    } else {
        post.root_id.clone()
    }
}

impl Dispatch {
    pub fn new(
        ctx: Arc<Context>,
        desk: Arc<Desk>,
        bot: String,
        gateway: Gateway,
        loop_sock: PathBuf,
        broker_sock: PathBuf,
    ) -> Self {
        Self {
            ctx,
            desk,
            bot,
            gateway,
            loop_sock,
            broker_sock,
            busy: Mutex::new(Busy::default()),
        }
    }

    /// One post from the channel: handled once, durably marked before anything is done.
    pub fn post(self: &Arc<Self>, post: Post) {
        if post.user_id == self.bot {
            return;
        }
        let stranger = !self.gateway.owners.contains(&post.user_id);
        {
            let mut s = self.ctx.store();
            if !s.is_new(&post.id, post.create_at) {
                return;
            }
            s.mark(&post.id, post.create_at);
            let from_bot = ["from_bot", "from_webhook"]
                .iter()
                .any(|k| post.props[k] == "true");
            let answer = s.approval_of(&post.root_id).is_some();
            let skip = !post.kind.is_empty() || from_bot;
            if !skip && !answer && stranger {
                let ignored = s.ignore();
                log::info(format_args!(
                    "ignored a post from {} (not an owner; {ignored} ignored so far)",
                    post.user_id
                ));
            }
            // One write: the post handled (and counted) before anything is done about it.
            s.save_or_log();
            if skip || (!answer && stranger) {
                return;
            }
        }
        // Anyone's reply on an approval post is an answer for brokerd to judge.
        if self.desk.reply(&post) || stranger {
            return;
        }
        let root = root_of(&post);
        {
            let mut busy = lock(&self.busy);
            if let Some(queue) = busy.threads.get_mut(&root) {
                queue.push_back(post);
                return;
            }
            if busy.threads.len() >= MAX_TURNS {
                busy.overflow.push_back(post);
                return;
            }
            busy.threads.insert(root.clone(), VecDeque::new());
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("turn".into())
            .spawn(move || me.thread(root, post));
        if let Err(e) = spawned {
            log::error(format_args!("cannot start a turn: {e}"));
        }
    }

    /// Answers `post`, then whatever queued behind it; then takes over a waiting thread.
    fn thread(&self, mut root: String, mut post: Post) {
        loop {
            self.answer(&post);
            let mut busy = lock(&self.busy);
            if let Some(p) = busy.threads.get_mut(&root).and_then(VecDeque::pop_front) {
                post = p;
                continue;
            }
            busy.threads.remove(&root);
            loop {
                let Some(p) = busy.overflow.pop_front() else {
                    return;
                };
                let r = root_of(&p);
                if let Some(queue) = busy.threads.get_mut(&r) {
                    queue.push_back(p);
                } else {
                    busy.threads.insert(r.clone(), VecDeque::new());
                    (root, post) = (r, p);
                    break;
                }
            }
        }
    }

    /// Says so in each thread whose answer a restart cut off (loopd finished the turn and
    /// logged it; only its showing was lost).
    pub fn cut_off(&self) {
        let cut: Vec<(String, String)> = self.ctx.store().take_cut_off().into_iter().collect();
        for (post, root) in cut {
            log::warn(format_args!(
                "the answer to post {post} was cut off by a restart"
            ));
            let note = "_The answer to this was cut off: gatewayd restarted. \
                        The conversation is kept; write again to go on._";
            if let Err(e) = self.ctx.post(&root, note) {
                log::warn(format_args!("saying an answer was cut off: {e}"));
            }
        }
        self.ctx.store().save_or_log();
    }

    fn answer(&self, post: &Post) {
        let root = root_of(post);
        let session = {
            let mut s = self.ctx.store();
            s.answering(&post.id, &root);
            s.save_or_log();
            s.session_of(&root).and_then(|id| SessionId::new(id).ok())
        };
        let turn = reply::Turn {
            client: self.ctx.client(),
            bot: &self.bot,
            channel: &post.channel_id,
            root: &root,
            interval: self.gateway.edit_interval,
            typing: self.gateway.typing_interval,
            loop_sock: &self.loop_sock,
            broker_sock: &self.broker_sock,
            server: &self.gateway.server,
            approval_post: &|approval| self.ctx.store().approval(approval).map(|a| a.post.clone()),
        };
        reply::answer(&turn, session, &post.message, &mut |session| {
            let mut s = self.ctx.store();
            if s.continue_thread(&root, session.as_str()) {
                s.save_or_log();
            }
        });
        let mut s = self.ctx.store();
        s.answered(&post.id);
        s.save_or_log();
    }
}
