/** cluster-key-slot ships no types: the Redis Cluster slot (CRC16 mod 16384, hash tags honoured) of a key. */
declare module "cluster-key-slot" {
  export default function calculateSlot(key: string | Buffer): number;
}
