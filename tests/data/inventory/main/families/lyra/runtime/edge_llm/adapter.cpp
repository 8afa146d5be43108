// The Edge-LLM adapter: one persistent runtime per bundle.
class EdgeTask final : public api::ITextContinuation, public api::IAudioTextToText {
    std::vector<api::TaskInstance> task_bindings() override {
        std::vector<api::TaskInstance> out{api::bind<api::ITextContinuation>(*this, text_fields())};
        if (audio_)
            out.push_back(api::bind<api::IAudioTextToText>(*this, media_fields()));
        return out;
    }
};
