//! `wasi:io` as a plugin's call sees it: every wait ends at the call's
//! deadline. (GOAT's own tools wait only on their files, and keep
//! wasmtime-wasi's implementation.)
//!
//! Epoch interruption stops a guest that runs past its time, but not one
//! waiting inside the host: a pollable that never becomes ready (a clock
//! subscribed for `u64::MAX` nanoseconds, an HTTP body nobody reads), a
//! blocking read or write on a stream that never moves. wasmtime-wasi's
//! synchronous bindings block the calling thread until the wait ends, so
//! such a call would hold its thread, and the session waiting on it,
//! forever. Here every blocking operation waits at most until the call's
//! deadline and then ends the call as the timeout it is (`Trap::Interrupt`,
//! which the call reports as its time limit). The operations that do not
//! wait go straight to wasmtime-wasi's own implementation.

use std::future::Future;

use tokio::time::Instant;
use wasmtime::Trap;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sync::io::poll::Pollable as DynPollable;
use wasmtime_wasi::p2::bindings::sync::io::streams::{InputStream, OutputStream};
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{StreamError, StreamResult};
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi_io::bindings::wasi::io::poll as async_poll;
use wasmtime_wasi_io::bindings::wasi::io::streams::{
    HostInputStream as AsyncInput, HostOutputStream as AsyncOutput,
};

/// The call's resource table and when its time is up.
pub(crate) struct Bounded<'a> {
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) deadline: Instant,
}

/// `wasi:io` host functions get the table with the call's deadline.
pub(crate) struct HasBoundedIo;

impl HasData for HasBoundedIo {
    type Data<'a> = Bounded<'a>;
}

/// Runs `wait` until `deadline`; past it, the call's time is up.
fn until<T>(deadline: Instant, wait: impl Future<Output = T>) -> wasmtime::Result<T> {
    in_tokio(async { tokio::time::timeout_at(deadline, wait).await })
        .map_err(|_| wasmtime::Error::from(Trap::Interrupt))
}

/// As [`until`], for a stream operation.
fn stream_until<T>(
    deadline: Instant,
    wait: impl Future<Output = Result<T, StreamError>>,
) -> StreamResult<T> {
    match until(deadline, wait) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e),
        Err(timeout) => Err(StreamError::Trap(timeout)),
    }
}

impl poll::Host for Bounded<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        until(
            self.deadline,
            async_poll::Host::poll(&mut *self.table, pollables),
        )?
    }
}

impl poll::HostPollable for Bounded<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        until(
            self.deadline,
            async_poll::HostPollable::ready(&mut *self.table, pollable),
        )?
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        until(
            self.deadline,
            async_poll::HostPollable::block(&mut *self.table, pollable),
        )?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(&mut *self.table, pollable)
    }
}

impl streams::Host for Bounded<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(&mut *self.table, err)
    }
}

impl streams::HostInputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        until(self.deadline, AsyncInput::drop(&mut *self.table, stream))?
    }

    fn read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        streams::HostInputStream::read(&mut *self.table, stream, len)
    }

    fn blocking_read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        stream_until(
            self.deadline,
            AsyncInput::blocking_read(&mut *self.table, stream, len),
        )
    }

    fn skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        streams::HostInputStream::skip(&mut *self.table, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        stream_until(
            self.deadline,
            AsyncInput::blocking_skip(&mut *self.table, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<InputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostInputStream::subscribe(&mut *self.table, stream)
    }
}

impl streams::HostOutputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        until(self.deadline, AsyncOutput::drop(&mut *self.table, stream))?
    }

    fn check_write(&mut self, stream: Resource<OutputStream>) -> StreamResult<u64> {
        streams::HostOutputStream::check_write(&mut *self.table, stream)
    }

    fn write(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        streams::HostOutputStream::write(&mut *self.table, stream, bytes)
    }

    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        bytes: Vec<u8>,
    ) -> StreamResult<()> {
        stream_until(
            self.deadline,
            AsyncOutput::blocking_write_and_flush(&mut *self.table, stream, bytes),
        )
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        stream_until(
            self.deadline,
            AsyncOutput::blocking_write_zeroes_and_flush(&mut *self.table, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<OutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostOutputStream::subscribe(&mut *self.table, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        streams::HostOutputStream::write_zeroes(&mut *self.table, stream, len)
    }

    fn flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        streams::HostOutputStream::flush(&mut *self.table, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        stream_until(
            self.deadline,
            AsyncOutput::blocking_flush(&mut *self.table, Resource::new_borrow(stream.rep())),
        )
    }

    fn splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        streams::HostOutputStream::splice(&mut *self.table, dst, src, len)
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        stream_until(
            self.deadline,
            AsyncOutput::blocking_splice(&mut *self.table, dst, src, len),
        )
    }
}
