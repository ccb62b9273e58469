//! inert's tests, one module per concern: how one line of foreign text is shown, and how
//! a block of several lines is.

mod block;
mod line;
