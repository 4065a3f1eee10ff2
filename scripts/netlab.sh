#!/usr/bin/env bash
# A network lab of three homes and the internet between them, in network namespaces (root only):
#
#   home-a 192.168.1.20 ── router-a (NAT, miniupnpd: UPnP-IGD, NAT-PMP, PCP) ─┐
#          2001:db8:a::20   WAN 11.0.113.7 / 2001:db8::7                    │
#                                                                          internet 11.0.113.1 / 2001:db8::1
#   home-b 192.168.2.20 ── router-b (NAT, no port mapping) ────────────────┤  (a bridge; a relay runs here)
#          2001:db8:b::20   WAN 11.0.113.8 / 2001:db8::8                    │
#   home-c 192.168.3.20 ── router-c (NAT, no port mapping) ────────────────┘
#          2001:db8:c::20   WAN 11.0.113.9 / 2001:db8::9
#
# Each router is a home router's firewall as well: nothing from the internet reaches the router itself unasked
# (its input drops what is not an answer, as OpenWrt's and most routers' do). This matters for two peers behind two
# routers that open a path to each other: a router that took an unasked datagram in would keep a connection entry
# for it, and its NAT would then give its own peer's datagrams to that sender another port.
#
# No namespace has a way out of the lab: nothing here is routed anywhere else. IPv6 uses the documentation prefix
# (RFC 3849), routed end to end without NAT (each home has a global /64), and the routers let it through, as many
# home routers do. IPv4's "internet" cannot use the documentation ranges (RFC 5737): miniupnpd refuses to map ports
# on a reserved external address ("Port forwarding is impossible"), as it should for a router behind another NAT,
# so it is 11.0.113.0/24, a public-looking block that exists only inside these namespaces.
#
#   scripts/netlab.sh up            build the lab (anything left from an earlier one is removed first)
#   scripts/netlab.sh down          remove all of it: processes inside, namespaces, the run directory
#   scripts/netlab.sh status        namespaces, addresses, miniupnpd, its mappings
#   scripts/netlab.sh upnp stop|start   stop or start the router's miniupnpd (a router without port mapping)
#   scripts/netlab.sh upnp natpmp-only  start it speaking NAT-PMP (and PCP) but not UPnP-IGD
#   scripts/netlab.sh exec NODE CMD…    run CMD in NODE (home-a, home-b, home-c, internet, router-a, router-b, router-c)
#
# NETLAB_PREFIX (default "tandem-") prefixes the namespaces, so labs of different prefixes can coexist;
# NETLAB_DIR (default /run/tandem-netlab-PREFIX) holds miniupnpd's configuration, log, pid and leases.
# miniupnpd's leases are capped at NETLAB_MAX_LEASE seconds (default 3600); a client asking for longer gets that.
set -euo pipefail

PREFIX=${NETLAB_PREFIX:-tandem-}
DIR=${NETLAB_DIR:-/run/tandem-netlab-${PREFIX%-}}
MAX_LEASE=${NETLAB_MAX_LEASE:-3600}
NODES=(home-a home-b home-c router-a router-b router-c internet)

ns() { echo "${PREFIX}$1"; }
in_ns() { local node=$1; shift; ip netns exec "$(ns "$node")" "$@"; }

need_root() {
    [ "$(id -u)" = 0 ] || { echo "netlab: network namespaces need root (run as root or with sudo)" >&2; exit 1; }
    for tool in ip nft miniupnpd; do
        command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] || {
            echo "netlab: $tool is missing — run 'make deps' (it installs iproute2, nftables and miniupnpd-nftables)" >&2
            exit 1
        }
    done
}

down() {
    if [ -f "$DIR/miniupnpd.pid" ]; then kill "$(cat "$DIR/miniupnpd.pid")" 2> /dev/null || true; fi
    for node in "${NODES[@]}"; do
        local name; name=$(ns "$node")
        ip netns list | grep -qw "^$name" || continue
        # Whatever still runs inside (a relay, a peer, miniupnpd) goes with its namespace.
        local pids; pids=$(ip netns pids "$name" 2> /dev/null || true)
        if [ -n "$pids" ]; then kill $pids 2> /dev/null || true; sleep 0.2; kill -9 $pids 2> /dev/null || true; fi
        ip netns delete "$name"
    done
    rm -rf "$DIR"
}

# A veth pair: $1 in namespace $2 named $3, peer in namespace $4 named $5.
link() {
    ip link add "$1" type veth peer name "$1-p"
    ip link set "$1" netns "$(ns "$2")" name "$3"
    ip link set "$1-p" netns "$(ns "$4")" name "$5"
    in_ns "$2" ip link set "$3" up
    in_ns "$4" ip link set "$5" up
}

sysctls() {
    in_ns "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    in_ns "$1" sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0
    if [ "${2:-}" = forward ]; then
        in_ns "$1" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
    fi
}

router() {  # router NODE WAN4 WAN6 LAN4 LAN6PREFIX HOME4
    local node=$1 wan4=$2 wan6=$3 lan4=$4 lan6=$5
    in_ns "$node" ip addr add "$wan4/24" dev wan0
    in_ns "$node" ip -6 addr add "$wan6/64" dev wan0 nodad
    in_ns "$node" ip addr add "$lan4/24" dev lan0
    in_ns "$node" ip -6 addr add "${lan6}1/64" dev lan0 nodad
    in_ns "$node" ip route add default via 11.0.113.1
    in_ns "$node" ip -6 route add default via 2001:db8::1
    # NAT as a home router does it: the LAN leaves masqueraded behind the WAN address; nothing comes in unasked
    # except what miniupnpd maps (its chains are jumped to first; they are empty on router-b, which has none).
    # One inet table, as miniupnpd's nftables backend expects by default (its filter and NAT chains in "filter").
    in_ns "$node" nft -f - <<EOF
table inet filter {
    chain forward {
        type filter hook forward priority 0; policy drop;
        ct state established,related accept
        iifname "lan0" accept
        meta nfproto ipv6 iifname "wan0" oifname "lan0" accept
        jump miniupnpd
    }
    chain miniupnpd { }
    chain input {
        type filter hook input priority 0; policy accept;
        iifname != "wan0" accept
        ct state established,related accept
        meta l4proto { icmp, ipv6-icmp } accept
        drop
    }
    chain prerouting {
        type nat hook prerouting priority -100; policy accept;
        jump prerouting_miniupnpd
    }
    chain postrouting {
        type nat hook postrouting priority 100; policy accept;
        jump postrouting_miniupnpd
        meta nfproto ipv4 oifname "wan0" masquerade
    }
    chain prerouting_miniupnpd { }
    chain postrouting_miniupnpd { }
}
EOF
}

home() {  # home NODE ADDR4 GATEWAY4 ADDR6 GATEWAY6
    in_ns "$1" ip addr add "$2/24" dev eth0
    in_ns "$1" ip -6 addr add "$4/64" dev eth0 nodad
    in_ns "$1" ip route add default via "$3"
    in_ns "$1" ip -6 route add default via "$5"
}

upnp_start() {
    local UPNP_IGD=${1:-yes}
    mkdir -p "$DIR"
    cat > "$DIR/miniupnpd.conf" <<EOF
ext_ifname=wan0
listening_ip=lan0
http_port=0
enable_natpmp=yes
enable_upnp=$UPNP_IGD
secure_mode=yes
system_uptime=yes
notify_interval=60
clean_ruleset_interval=600
lease_file=$DIR/upnp.leases
uuid=7a3e0b1c-5d2f-4e8a-9b6c-0d1e2f3a4b5c
friendly_name=Tandem netlab router
upnp_table_name=filter
upnp_nat_table_name=filter
upnp_forward_chain=miniupnpd
upnp_nat_chain=prerouting_miniupnpd
upnp_nat_postrouting_chain=postrouting_miniupnpd
max_lifetime=$MAX_LEASE
allow 1024-65535 192.168.1.0/24 1024-65535
deny 0-65535 0.0.0.0/0 0-65535
EOF
    # The previous daemon's log is emptied here, not only by the background redirection below: otherwise the wait
    # for "Listening for NAT-PMP" can read the old daemon's line before the new one has started (a restart then
    # returns early and a client's first request goes unanswered).
    : > "$DIR/miniupnpd.log"
    # -d: in the foreground (here, in the background of this script), logging to its file.
    # Its own process with the log as output and no other descriptor of ours: a caller that waits for this script
    # (or for the end of its output) must not wait for miniupnpd as well.
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            [ "$fd" -gt 2 ] 2> /dev/null && eval "exec $fd>&-"
        done
        # With the signals a caller may have blocked or ignored (a test runner does) back to normal, so that
        # SIGTERM stops it cleanly (it then removes its rules).
        exec python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(number, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' ip netns exec "$(ns router-a)" setsid miniupnpd -d -f "$DIR/miniupnpd.conf" \
            -P "$DIR/miniupnpd.pid"
    ) > "$DIR/miniupnpd.log" 2>&1 < /dev/null &
    for _ in $(seq 50); do
        grep -q "Listening for NAT-PMP" "$DIR/miniupnpd.log" 2> /dev/null && return 0
        sleep 0.1
    done
    echo "netlab: miniupnpd did not start; its log ($DIR/miniupnpd.log):" >&2
    cat "$DIR/miniupnpd.log" >&2
    return 1
}

upnp_stop() {
    [ -f "$DIR/miniupnpd.pid" ] || return 0
    local pid; pid=$(cat "$DIR/miniupnpd.pid")
    kill "$pid" 2> /dev/null || true
    # Gone, or a zombie whose parent has not reaped it yet (it no longer answers anything).
    for _ in $(seq 50); do
        [ -e "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" != Z ] || break
        sleep 0.1
    done
    rm -f "$DIR/miniupnpd.pid"
    if [ -e "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" != Z ]; then
        echo "netlab: miniupnpd ($pid) did not stop on SIGTERM; killed" >&2
        kill -9 "$pid" 2> /dev/null || true
    fi
}

up() {
    down
    mkdir -p "$DIR"
    for node in "${NODES[@]}"; do
        ip netns add "$(ns "$node")"
        in_ns "$node" ip link set lo up
    done
    sysctls internet forward; sysctls router-a forward; sysctls router-b forward; sysctls router-c forward
    sysctls home-a; sysctls home-b; sysctls home-c

    in_ns internet ip link add wan type bridge
    in_ns internet ip link set wan up
    link "${PREFIX}ra" router-a wan0 internet ra
    link "${PREFIX}rb" router-b wan0 internet rb
    link "${PREFIX}rc" router-c wan0 internet rc
    in_ns internet ip link set ra master wan
    in_ns internet ip link set rb master wan
    in_ns internet ip link set rc master wan
    in_ns internet ip addr add 11.0.113.1/24 dev wan
    in_ns internet ip -6 addr add 2001:db8::1/64 dev wan nodad
    in_ns internet ip -6 route add 2001:db8:a::/64 via 2001:db8::7
    in_ns internet ip -6 route add 2001:db8:b::/64 via 2001:db8::8
    in_ns internet ip -6 route add 2001:db8:c::/64 via 2001:db8::9

    link "${PREFIX}ha" home-a eth0 router-a lan0
    link "${PREFIX}hb" home-b eth0 router-b lan0
    link "${PREFIX}hc" home-c eth0 router-c lan0
    router router-a 11.0.113.7 2001:db8::7 192.168.1.1 2001:db8:a::
    router router-b 11.0.113.8 2001:db8::8 192.168.2.1 2001:db8:b::
    router router-c 11.0.113.9 2001:db8::9 192.168.3.1 2001:db8:c::
    home home-a 192.168.1.20 192.168.1.1 2001:db8:a::20 2001:db8:a::1
    home home-b 192.168.2.20 192.168.2.1 2001:db8:b::20 2001:db8:b::1
    home home-c 192.168.3.20 192.168.3.1 2001:db8:c::20 2001:db8:c::1
    upnp_start
    echo "netlab up: $(printf '%s ' "${NODES[@]/#/$PREFIX}")(miniupnpd on $(ns router-a), log $DIR/miniupnpd.log)"
}

status() {
    for node in "${NODES[@]}"; do
        ip netns list | grep -qw "^$(ns "$node")" || { echo "$(ns "$node"): absent"; continue; }
        echo "$(ns "$node"): $(in_ns "$node" ip -br addr | grep -v '^lo' | tr -s ' ' | tr '\n' ';')"
    done
    if [ -f "$DIR/miniupnpd.pid" ] && kill -0 "$(cat "$DIR/miniupnpd.pid")" 2> /dev/null; then
        echo "miniupnpd: running (pid $(cat "$DIR/miniupnpd.pid"))"
        in_ns router-a nft list chain inet filter prerouting_miniupnpd 2> /dev/null | grep -E "dnat|tcp|udp" || echo "  no mappings"
    else
        echo "miniupnpd: stopped"
    fi
}

case "${1:-}" in
    up) need_root; up ;;
    down) need_root; down; echo "netlab down" ;;
    status) need_root; status ;;
    upnp)
        need_root
        case "${2:-}" in
            stop) upnp_stop ;;
            start) upnp_stop; upnp_start ;;
            natpmp-only) upnp_stop; upnp_start no ;;
            *) echo "usage: $0 upnp stop|start|natpmp-only" >&2; exit 64 ;;
        esac ;;
    exec)
        need_root
        node=${2:-}; shift 2 || true
        [[ " ${NODES[*]} " == *" $node "* ]] || { echo "netlab: no node '$node' (one of: ${NODES[*]})" >&2; exit 64; }
        in_ns "$node" "$@" ;;
    *) echo "usage: $0 up|down|status|upnp stop|start|exec NODE CMD…" >&2; exit 64 ;;
esac
