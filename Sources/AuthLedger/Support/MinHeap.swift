/// A binary min-heap of (key, value) pairs ordered by key: the timers' queue (the
/// doorbells' ticker, the watches' deadlines). Not thread-safe: its owner's lock guards it.
struct MinHeap<Key: Comparable, Value> {
    private var items: [(key: Key, value: Value)] = []

    /// The smallest key and its value.
    var first: (key: Key, value: Value)? { items.first }

    mutating func push(_ key: Key, _ value: Value) {
        items.append((key, value))
        var k = items.count - 1
        while k > 0 {
            let parent = (k - 1) / 2
            guard items[k].key < items[parent].key else { break }
            items.swapAt(k, parent)
            k = parent
        }
    }

    /// Removes and returns the smallest (nil when empty).
    mutating func pop() -> (key: Key, value: Value)? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var k = 0
            while true {
                let l = 2 * k + 1, r = l + 1
                var m = k
                if l < items.count && items[l].key < items[m].key { m = l }
                if r < items.count && items[r].key < items[m].key { m = r }
                if m == k { break }
                items.swapAt(k, m)
                k = m
            }
        }
        return top
    }
}
