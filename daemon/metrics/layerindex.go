package metrics

import "github.com/prometheus/client_golang/prometheus"

// LayerIndexes are the families of the layer indexes that ls, cat and cp
// read (graph/contents' Observer): what they use of their disk budget,
// how each was built and how many the budget evicted.
type LayerIndexes struct {
	files   prometheus.Gauge
	bytes   prometheus.Gauge
	built   *prometheus.CounterVec
	evicted prometheus.Counter
}

// layerIndexSources are the sources an index is built from, listed at 0
// from the start so that a rate of each has its series before the first.
var layerIndexSources = []string{"layer", "stream", "estargz", "zstd:chunked"}

// LayerIndexes registers the families and returns their observer.
func (m *Metrics) LayerIndexes() *LayerIndexes {
	l := &LayerIndexes{
		files: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_layer_indexes",
			Help: "Layer indexes kept on disk (one per layer digest)."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wharf_layer_index_bytes",
			Help: "Bytes of the layer indexes on disk, held under the layer-index-budget."}),
		built: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wharf_layer_indexes_built_total",
			Help: "Layer indexes built, by source: layer (the local layer or a pull's bytes), stream (one read of the remote layer), estargz or zstd:chunked (the publisher's TOC)."}, []string{"source"}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "wharf_layer_indexes_evicted_total",
			Help: "Layer indexes removed, least recently used first, to stay under the layer-index-budget."}),
	}
	for _, s := range layerIndexSources {
		l.built.WithLabelValues(s)
	}
	m.reg.MustRegister(l.files, l.bytes, l.built, l.evicted)
	return l
}

// IndexUsage sets the files and bytes on disk.
func (l *LayerIndexes) IndexUsage(files int, bytes int64) {
	l.files.Set(float64(files))
	l.bytes.Set(float64(bytes))
}

// IndexBuilt counts one index built from source.
func (l *LayerIndexes) IndexBuilt(source string) { l.built.WithLabelValues(source).Inc() }

// IndexEvicted counts one index evicted for the budget.
func (l *LayerIndexes) IndexEvicted() { l.evicted.Inc() }
