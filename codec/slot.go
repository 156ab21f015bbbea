package codec

// NumSlots is the number of Redis Cluster hash slots.
const NumSlots = 16384

// crc16tab is the CRC16-XMODEM (CCITT, polynomial 0x1021, init 0) table used
// by Redis Cluster, computed once at start-up.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 returns the CRC16-XMODEM checksum of b, as Redis Cluster computes it.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^c]
	}
	return crc
}

// Slot returns the Redis Cluster hash slot (0..16383) of key. When key holds
// a non-empty "{tag}" (the first '{' followed later by a '}' with at least one
// byte between them) only the tag is hashed, exactly as in the Redis Cluster
// specification (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/).
func Slot(key []byte) uint16 {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return CRC16(key) & (NumSlots - 1)
			}
		}
		break
	}
	return CRC16(key) & (NumSlots - 1)
}
