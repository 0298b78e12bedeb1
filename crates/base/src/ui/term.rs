//! The progress bars' terminal: the tool's own stderr (fd 2 itself carries native output, see
//! `ui::stdio`), driven with plain ANSI cursor sequences.

use std::io;

use indicatif::TermLike;

use crate::ui::stdio::{tool_stderr_fd, write_err_raw};

#[derive(Debug)]
pub struct ToolStderr;

impl TermLike for ToolStderr {
    fn width(&self) -> u16 {
        // SAFETY: TIOCGWINSZ fills the struct we pass.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(tool_stderr_fd(), libc::TIOCGWINSZ, &mut ws) } == 0;
        if ok && ws.ws_col > 0 { ws.ws_col } else { 80 }
    }

    fn height(&self) -> u16 {
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(tool_stderr_fd(), libc::TIOCGWINSZ, &mut ws) } == 0;
        if ok && ws.ws_row > 0 { ws.ws_row } else { 24 }
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        cursor(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        cursor(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        cursor(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        cursor(n, 'D')
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        write_err_raw(format!("{s}\n").as_bytes())
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        write_err_raw(s.as_bytes())
    }

    fn clear_line(&self) -> io::Result<()> {
        write_err_raw(b"\r\x1b[2K")
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }
}

fn cursor(n: usize, dir: char) -> io::Result<()> {
    if n == 0 {
        return Ok(());
    }
    write_err_raw(format!("\x1b[{n}{dir}").as_bytes())
}

/// Where bars draw: the tool's stderr when it is a terminal and `-q` is off, else nowhere.
pub fn draw_target() -> indicatif::ProgressDrawTarget {
    if bars_enabled() {
        indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(ToolStderr), 10)
    } else {
        indicatif::ProgressDrawTarget::hidden()
    }
}

/// Bars on a terminal (not quiet); plain heartbeat lines otherwise.
pub fn bars_enabled() -> bool {
    crate::ui::stdio::terminals().1 && !super::quiet()
}
