//! inert's tests, one module per concern: how one line of foreign text is shown, how a
//! block of several lines is, and which code points are hidden (a test per class).

mod block;
mod classes;
mod line;
