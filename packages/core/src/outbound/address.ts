import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

function v6Range(addr: ipaddr.IPv6, text: string): string {
  const p = addr.parts as number[];
  // ipaddr.js reads the IPv4-compatible spelling "::8.8.8.8" as mapped; it is not (no ffff).
  const range = addr.range() === 'ipv4Mapped' && !/ffff/i.test(text) ? 'unicast' : addr.range();
  switch (range) {
    // Addresses that carry an IPv4 address are only as good as the IPv4 address they lead to.
    case 'ipv4Mapped':
      return v4(p[6]!, p[7]!).range();
    case 'rfc6052':
      // 64:ff9b::/96 is NAT64 (DNS64 answers on IPv6-only hosts); the local-use 64:ff9b:1::/48 is not global.
      return p[1] === 0xff9b && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 ? v4(p[6]!, p[7]!).range() : range;
    case '6to4':
      return v4(p[1]!, p[2]!).range();
    case 'teredo': {
      const server = v4(p[2]!, p[3]!).range();
      const client = v4(~p[6]! & 0xffff, ~p[7]! & 0xffff).range();
      return server !== 'unicast' ? server : client;
    }
    case 'unicast':
      // ipaddr.js calls anything unlisted unicast; only 2000::/3 is allocated as global unicast.
      if (p.slice(0, 6).every((x) => x === 0)) {
        const embedded = v4(p[6]!, p[7]!).range();
        return embedded === 'unicast' ? 'ipv4Compatible' : embedded;
      }
      return (p[0]! & 0xe000) === 0x2000 ? 'unicast' : 'reserved';
    default:
      return range;
  }
}

/** 'unicast' only for a global unicast address; otherwise why it is refused, or 'invalid'. */
export function addressRange(ip: string): string {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  let addr: Address;
  try {
    addr = ipaddr.parse(text);
  } catch {
    return 'invalid';
  }
  return addr.kind() === 'ipv4' ? (addr as ipaddr.IPv4).range() : v6Range(addr as ipaddr.IPv6, text);
}

