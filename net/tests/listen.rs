//! `listen` queues a burst of connections nobody has accepted yet: with the old fixed
//! backlog of 128 the connections past it were dropped by the kernel and their clients
//! waited for SYN retries.

use std::time::Duration;

use tokio::net::TcpStream;

#[tokio::test]
async fn a_burst_of_connections_waits_in_the_backlog() {
    let listener = ctrl_net::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let burst = 600.min(ctrl_net::max_backlog() as usize);
    let mut open = Vec::new();
    for i in 0..burst {
        // Nothing accepts: each connect completes only if the kernel queued it.
        let c = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
            .await
            .unwrap_or_else(|_| panic!("connection {i} of {burst} was not queued"))
            .unwrap();
        open.push(c);
    }
    assert_eq!(open.len(), burst);
    assert!(ctrl_net::max_backlog() >= 128);
}

#[tokio::test]
async fn accepted_streams_have_keepalive_and_nodelay() {
    let listener = ctrl_net::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut acceptor =
        ctrl_net::Acceptor::new(tokio::net::TcpListener::from_std(listener).unwrap(), "test");
    let client = tokio::spawn(TcpStream::connect(addr));
    let (stream, _) = acceptor.accept().await;
    let _client = client.await.unwrap().unwrap();
    let sock = socket2::SockRef::from(&stream);
    assert!(sock.keepalive().unwrap());
    assert_eq!(sock.tcp_keepalive_time().unwrap(), ctrl_net::TCP_KEEPALIVE);
    assert!(sock.tcp_nodelay().unwrap());
}
