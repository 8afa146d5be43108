// Omnivox runtime: text in, text out.
ITask* create(const FamilyContext& context) {
    auto config = parse(require_text_section(context.reader, "runtime.json"));
    auto thinker = load(require_section(context.reader, "thinker.plan"));
    return new OmnivoxText(std::move(thinker), config);
}
