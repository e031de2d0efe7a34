//! `network = "allowlist"` applied (issue 28; docs/linux.md, "Egress by host name"): the egress
//! proxy's listener in the chat's own network namespace, handed to the helper outside.
//!
//! Init is cloned into a new network namespace (`apply`): only `lo`, down, and no pasta. After
//! the helper's "go" and before anything else (while init still holds every capability in its
//! user namespace, and before it closes its descriptors), init brings `lo` up, makes a TCP
//! listener on `127.0.0.1:PORT` and sends it over a unix socket pair (`SCM_RIGHTS`) the helper
//! made before the clone; then it closes its copies of both. The helper, outside every namespace
//! of the chat's, receives the listener and serves the proxy on it for the chat's life. So the
//! only peer any process of the chat can reach is that listener: no other interface, no route,
//! no address of the machine's (its loopback is another namespace's), for any socket family.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

use super::sys::{ApplyError, fail};
use crate::plan::format::EgressPlan;

/// The pair the listener travels over: the helper's end and init's, both close-on-exec.
pub(super) fn pair() -> Result<(OwnedFd, OwnedFd), ApplyError> {
    rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| fail("egress: socket pair", std::io::Error::from(e)))
}

/// Init's part, in the chat's new network namespace: `lo` up, the listener made, sent to the
/// helper over `to_helper`; init keeps neither.
pub(super) fn hand_listener(egress: &EgressPlan, to_helper: OwnedFd) -> Result<(), ApplyError> {
    loopback_up()?;
    let step = |what: &str| format!("egress: {what}");
    let io = std::io::Error::from;
    let listener = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| fail(step("socket"), io(e)))?;
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, egress.port);
    rustix::net::bind(&listener, &address)
        .map_err(|e| fail(step(&format!("bind {address}")), io(e)))?;
    rustix::net::listen(&listener, 128).map_err(|e| fail(step("listen"), io(e)))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [listener.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(fail(
            step("send the listener"),
            "no room for the descriptor",
        ));
    }
    rustix::net::sendmsg(
        &to_helper,
        &[IoSlice::new(b"L")],
        &mut control,
        SendFlags::empty(),
    )
    .map_err(|e| fail(step("send the listener"), io(e)))?;
    Ok(())
}

/// The helper's part: the listener init sent, or why none came (init failed first: it says
/// why through its report, and this is `None`).
pub(super) fn receive_listener(from_init: &OwnedFd) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        from_init,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    if got.bytes != 1 {
        return None;
    }
    let mut listener = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for fd in fds {
                listener.get_or_insert(fd);
            }
        }
    }
    listener
}

/// `lo` up in this (new) network namespace, by netlink: the only interface the chat has.
fn loopback_up() -> Result<(), ApplyError> {
    use netlink_packet_core::{
        NLM_F_ACK, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
    };
    use netlink_packet_route::RouteNetlinkMessage;
    use netlink_packet_route::link::{LinkFlags, LinkMessage};
    use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

    let step = "egress: bring lo up";
    // SAFETY: a NUL-terminated literal, alive for the call; if_nametoindex only reads it.
    let index = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    if index == 0 {
        return Err(fail(step, std::io::Error::last_os_error()));
    }
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(|e| fail(step, e))?;
    socket.bind_auto().map_err(|e| fail(step, e))?;
    socket
        .connect(&SocketAddr::new(0, 0))
        .map_err(|e| fail(step, e))?;
    let mut link = LinkMessage::default();
    link.header.index = index;
    link.header.flags = LinkFlags::Up;
    link.header.change_mask = LinkFlags::Up;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_ACK;
    header.sequence_number = 1;
    let mut message = NetlinkMessage::new(
        header,
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::SetLink(link)),
    );
    message.finalize();
    let mut buf = vec![0u8; message.buffer_len()];
    message.serialize(&mut buf);
    socket.send(&buf, 0).map_err(|e| fail(step, e))?;
    let mut answer = vec![0u8; 8192];
    let n = socket
        .recv(&mut &mut answer[..], 0)
        .map_err(|e| fail(step, e))?;
    let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&answer[..n])
        .map_err(|e| fail(step, e))?;
    match reply.payload {
        NetlinkPayload::Error(e) if e.code.is_none() => Ok(()),
        NetlinkPayload::Error(e) => {
            Err(fail(step, std::io::Error::from_raw_os_error(-e.raw_code())))
        }
        other => Err(fail(step, format!("unexpected answer {other:?}"))),
    }
}

/// The proxy variables the chat's processes get, to `http://127.0.0.1:PORT`, and `NO_PROXY`
/// removed (set in init, single-threaded, before the program starts; a program that drops them
/// reaches nothing: the listener is the only peer).
pub(super) fn proxy_environment(egress: &EgressPlan) {
    let url = format!("http://127.0.0.1:{}", egress.port);
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        // SAFETY: init is single-threaded (a fork-like clone of a single-threaded helper).
        unsafe { std::env::set_var(name, &url) };
    }
    for name in ["NO_PROXY", "no_proxy"] {
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
