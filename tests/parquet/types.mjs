// polars' printed type of each column ("Series: 'time' [duration[ns]]" ->
// "duration[ns]"): the JS binding's dtype objects do not carry the time unit.
export function types(df) {
  return df.columns.map((c) => {
    const m = df.getColumn(c).head(0).toString().match(/^Series: .* \[(.*)\]$/m);
    return [c, m ? m[1] : "?"];
  });
}
