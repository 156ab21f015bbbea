package codec

// NumSlots is the number of Redis Cluster hash slots.
const NumSlots = 16384

// crc16tab is the CRC16-XMODEM (CCITT, polynomial 0x1021, init 0) table used
// by Redis Cluster, extended for slicing by 8: crc16tab[0][b] is the CRC of
// the byte b, and crc16tab[k][b] the CRC of b followed by k zero bytes.
// Computed once at start-up.
var crc16tab = func() (t [8][256]uint16) {
	for i := range t[0] {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			v := t[k-1][i]
			t[k][i] = v<<8 ^ t[0][v>>8]
		}
	}
	return t
}()

// CRC16 returns the CRC16-XMODEM checksum of b, as Redis Cluster computes it.
// It takes 8 bytes per step (the CRC is linear: the 16-bit state folds into
// the step's first two bytes), then the tail a byte at a time; every key
// encoding hashes its user key for the slot, so this is on every command's
// path.
func CRC16(b []byte) uint16 {
	var crc uint16
	t := &crc16tab
	for len(b) >= 8 {
		crc = t[7][b[0]^byte(crc>>8)] ^ t[6][b[1]^byte(crc)] ^
			t[5][b[2]] ^ t[4][b[3]] ^ t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		crc = crc<<8 ^ t[0][byte(crc>>8)^c]
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
